/* Example consumer: follows a stream from its first chunk and prints each
 * committed chunk as it arrives, with the daemon pushing the decompressed
 * bytes and (protocol version 2) the chunk's record: the producer's frame
 * number, or a gap.  Stops after 10 s without a new chunk.
 *
 *   consumer [STREAM [ENDPOINT]]        default: demo, b2sc_default_endpoint
 *
 * To read the frame file directly instead, follow with B2SC_FOLLOW_NOTIFY
 * and decode each announced index with the core's b2s_frame_open /
 * b2s_frame_chunk_decompress: an announced chunk is committed there. */
#include <stdint.h>
#include <stdio.h>

#include <b2stream_client.h>

int main(int argc, char **argv) {
  const char *stream = argc > 1 ? argv[1] : "demo";
  const char *endpoint = argc > 2 ? argv[2] : NULL;
  b2sc_session *s;
  b2sc_consumer *c;
  int rc = b2sc_connect(endpoint, "example-consumer", &s);
  if (rc < 0) {
    fprintf(stderr, "consumer: connect: %s\n", b2sc_strerror(rc));
    return 1;
  }
  unsigned records = b2sc_protocol_version(s) >= 2 ? B2SC_FOLLOW_RECORDS : 0;
  rc = b2sc_follow(s, stream, 0, B2SC_FOLLOW_PUSH_DECOMPRESSED | records, &c);
  b2sc_chunk_info ci;
  b2sc_record rec;
  while (rc >= 0 && (rc = b2sc_next_rec(c, 10000, &ci, &rec)) == 0) {
    uint64_t sum = 0;   /* stand-in for real processing */
    for (size_t i = 0; i < ci.len; i++)
      sum += ((const uint8_t *)ci.data)[i];
    printf("chunk %llu: %u bytes (%u stored), byte sum %llu",
           (unsigned long long)ci.index, ci.nbytes, ci.cbytes,
           (unsigned long long)sum);
    if (rec.flags & B2SC_REC_GAP)
      printf(", a gap");
    else if (rec.present & B2SC_REC_FRAME)
      printf(", frame %llu", (unsigned long long)rec.frame);
    printf("\n");
  }
  if (rc != B2S_E_TIMEOUT)
    fprintf(stderr, "consumer: %s: %s\n", b2sc_strerror(rc),
            b2sc_last_error(s));
  b2sc_unfollow(c);
  b2sc_close(s);
  return rc == B2S_E_TIMEOUT ? 0 : 1;
}
