/* What the two paths of b2stream produce share: its options, reading the
 * input, and each buffer's record.  cmd_produce.c parses the options and
 * sends to one daemon; produce_cluster.c sends to the ranks of a
 * distributed stream (--ranks), each buffer to the rank owning its frame
 * number; produce_common.c has what both use. */
#ifndef B2S_CLI_PRODUCE_H
#define B2S_CLI_PRODUCE_H

#include <sys/types.h>

#include "cli_client.h"
#include "b2s_msgpack.h"

#define PRODUCE_CREDIT_MS 30000   /* longest wait for credit per buffer */
#define PRODUCE_FLUSH_MS 60000
#define PRODUCE_META_MAX 64       /* --meta options */

typedef struct produce_opts {
  const char *endpoint, *stream, *tmpl, *input;
  int64_t chunk_bytes;
  const char *meta[PRODUCE_META_MAX];   /* KEY=VALUE */
  int nmeta;
  int64_t frame;                        /* first frame number, or -1 */
  bool timestamp;
  /* --ranks: endpoints in rank order (into ranks_buf, a copy of the
   * option's text), 0 without the option */
  char *ranks_buf;
  const char **ranks;
  int nranks;
  int64_t frames_per_block;
} produce_opts;

/* Read up to len bytes (less only at the end of the input). */
ssize_t produce_read_full(int fd, uint8_t *buf, size_t len);

/* Buffer i's record per the options (NULL: none asked for). */
const b2sc_record *produce_record(const produce_opts *o, uint64_t i,
                                  b2sc_record *rec);

/* The --meta options as one msgpack map. */
int produce_meta_map(const produce_opts *o, b2s_mpbuf *b);

/* produce --ranks: the whole input to the ranks; an exit status. */
int produce_cluster(const produce_opts *o, int fd);

#endif
