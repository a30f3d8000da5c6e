/* A PATH of any kind for the b2stream tool: a sparse frame directory, a
 * contiguous frame file or a single chunk file, behind one interface of
 * numbered chunks (see cli.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* msgpack fixarray(14), fixstr(8), "b2frame\0" */
static const uint8_t frame_magic[10] = {0x9e, 0xa8, 'b', '2', 'f',
                                        'r',  'a',  'm', 'e', 0};

const char *cli_kind_name(cli_kind k) {
  static const char *const names[] = {"chunk", "cframe", "sframe", "dframe"};
  return names[k];
}

/* Read exactly n bytes of fd at pos. */
static int read_at(int fd, uint8_t *dst, size_t n, int64_t pos) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, dst + got, n - got, (off_t)(pos + (int64_t)got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      return B2S_E_TRUNCATED;
    got += (size_t)r;
  }
  return 0;
}

static int open_chunk_file(cli_src *src, int fd, int64_t size) {
  if (size > (int64_t)B2S_MAX_BUFFERSIZE + B2S_MAX_OVERHEAD) {
    cli_err("%s: not a frame, and too large for a chunk", src->path);
    return B2S_E_CBYTES;
  }
  src->chunk = malloc(size ? (size_t)size : 1);
  if (src->chunk == NULL) {
    cli_err("%s: out of memory", src->path);
    return B2S_E_NOMEM;
  }
  int rc = read_at(fd, src->chunk, (size_t)size, 0);
  if (rc < 0) {
    cli_err("%s: cannot read: %s", src->path, b2s_strerror(rc));
    return rc;
  }
  src->chunk_len = (size_t)size;
  b2s_chunk_info info;
  rc = b2s_chunk_info_get(src->chunk, src->chunk_len, &info);
  if (rc < 0)
    cli_err("%s: neither a frame nor a valid chunk: %s", src->path,
            b2s_strerror(rc));
  return rc;
}

/* Print a frame error of src with its byte offset in the file PATH: the
 * core counts from the frame's start. */
static void report_frame_err(const cli_src *src, const b2s_frame_error *e,
                             int code, int64_t chunk_id) {
  b2s_frame_error in_file;
  if (e != NULL && src->kind == CLI_KIND_CFRAME && e->offset >= 0) {
    in_file = *e;
    in_file.offset += src->offset;
    e = &in_file;
  }
  cli_err_frame(src->path, e, code, chunk_id);
}

/* A regular file: a contiguous frame when it has the magic at src->offset,
 * else (without --offset) a chunk. */
static int open_file(cli_src *src, bool at_offset) {
  int fd = open(src->path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    int rc = -errno;
    cli_err("%s: %s", src->path, strerror(-rc));
    if (fd >= 0)
      close(fd);
    return rc;
  }
  uint8_t head[sizeof frame_magic];
  int rc = 0;
  bool is_frame = read_at(fd, head, sizeof head, src->offset) == 0 &&
                  !memcmp(head, frame_magic, sizeof head);
  if (is_frame) {
    src->kind = CLI_KIND_CFRAME;
    b2s_frame_error err;
    rc = b2s_frame_open_file(src->path, src->offset, &src->frame, &err);
    if (rc < 0)
      report_frame_err(src, &err, rc, -1);
  } else if (at_offset && src->offset >= (int64_t)st.st_size) {
    cli_err("%s: no frame at byte %lld: the file has %lld bytes", src->path,
            (long long)src->offset, (long long)st.st_size);
    rc = B2S_E_TRUNCATED;
  } else if (at_offset) {
    cli_err("%s: no frame at byte %lld: the frame magic is not there",
            src->path, (long long)src->offset);
    rc = B2S_E_FRAME;
  } else {
    src->kind = CLI_KIND_CHUNK;
    rc = open_chunk_file(src, fd, (int64_t)st.st_size);
  }
  close(fd);
  return rc;
}

/* A command's option other than PATH (see cli_src_open_args). */
static int take_option(cli_args *a, unsigned accept, cli_src_line *line) {
  if ((accept & CLI_LINE_JSON) && !strcmp(a->opt, "json")) {
    if (!cli_args_no_value(a))
      return CLI_EXIT_USAGE;
    line->json = true;
    return CLI_EXIT_OK;
  }
  bool chunk = (accept & CLI_LINE_CHUNK) && !strcmp(a->opt, "chunk");
  bool conf = !strcmp(a->opt, "ceph-conf");
  if (!chunk && !conf && strcmp(a->opt, "offset"))
    return cli_unknown_option(a);
  const char *v = cli_args_value(a);
  if (v == NULL)
    return CLI_EXIT_USAGE;
  if (conf) {
    line->ceph_conf = v;
    return CLI_EXIT_OK;
  }
  if (chunk && cli_parse_int(v, 0, INT64_MAX, &line->chunk) < 0)
    return cli_usage(a, "--chunk needs a chunk number, not '%s'", v);
  if (!chunk && cli_parse_size(v, 0, INT64_MAX, &line->offset) < 0)
    return cli_usage(a, "--offset needs a byte offset, not '%s'", v);
  return CLI_EXIT_OK;
}

int cli_src_open_args(int argc, char **argv, unsigned accept, cli_src *src,
                      cli_src_line *line) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  *line = (cli_src_line){.json = false, .chunk = -1, .offset = -1};
  const char *path = NULL, *operand;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    int status = CLI_EXIT_OK;
    if (t == 2 && path != NULL)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (t == 2)
      path = operand;
    else
      status = take_option(&a, accept, line);
    if (status != CLI_EXIT_OK)
      return status;
  }
  if (path == NULL)
    return cli_usage(&a, "missing PATH");
  line->path = path;
  cli_dist_url u;
  int dist = cli_dist_parse(path, &u);
  if (dist == 0 && line->ceph_conf != NULL)
    return cli_usage(&a, "--ceph-conf goes with a rados:// PATH");
  if (dist == 1 && line->offset >= 0)
    return cli_usage(&a, "--offset goes with a file, not with %s", path);
  if (dist < 0)
    return CLI_EXIT_USAGE;         /* a malformed URL: reported */
  if (dist == 1)
    line->open_rc = cli_src_open_dist(path, line->ceph_conf, src);
  else
    line->open_rc = cli_src_open_at(path, line->offset, src);
  return line->open_rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_src_open(const char *path, cli_src *src) {
  cli_dist_url u;
  int dist = cli_dist_parse(path, &u);
  if (dist < 0)
    return dist;
  return dist ? cli_src_open_dist(path, NULL, src)
              : cli_src_open_at(path, -1, src);
}

/* offset < 0: no --offset (the kind of PATH decides, frames start at 0). */
int cli_src_open_at(const char *path, int64_t offset, cli_src *src) {
  memset(src, 0, sizeof *src);
  src->path = path;
  src->offset = offset > 0 ? offset : 0;
  src->ctx = b2s_ctx_new();
  if (src->ctx == NULL) {
    cli_err("%s: out of memory", path);
    return B2S_E_NOMEM;
  }
  struct stat st;
  int rc = 0;
  if (stat(path, &st) < 0) {
    rc = -errno;
    cli_err("%s: %s", path, strerror(-rc));
  } else if (!S_ISDIR(st.st_mode)) {
    rc = open_file(src, offset >= 0);
  } else if (offset >= 0) {
    cli_err("%s: --offset needs a file holding a contiguous frame, not a "
            "directory", path);
    rc = B2S_E_ARG;
  } else {
    src->kind = CLI_KIND_SFRAME;
    b2s_frame_error err;
    rc = b2s_frame_open_sparse(path, &src->frame, &err);
    if (rc < 0)
      cli_err_frame(path, &err, rc, -1);
  }
  if (rc < 0)
    cli_src_close(src);
  return rc;
}

int cli_src_open_dist(const char *path, const char *ceph_conf, cli_src *src) {
  memset(src, 0, sizeof *src);
  src->path = path;
  src->kind = CLI_KIND_DFRAME;
  src->dchunk_i = -1;
  if ((src->ctx = b2s_ctx_new()) == NULL) {
    cli_err("%s: out of memory", path);
    return B2S_E_NOMEM;
  }
  int rc = cli_dist_open(path, ceph_conf, &src->store, &src->dframe);
  if (rc >= 0)
    rc = cli_src_refresh(src);
  if (rc < 0)
    cli_src_close(src);
  return rc;
}

void cli_src_close(cli_src *src) {
  int64_t lost = b2s_dframe_records_recovered(src->dframe);
  if (lost > 0)
    cli_err("warning: %s: the key log lacks %lld records of committed chunks "
            "(a damaged batch, skipped by its checksum); they were read from "
            "their chunk objects (b2stream recover rewrites them)",
            src->path ? src->path : "frame", (long long)lost);
  b2s_dframe_free(src->dframe);     /* borrows the store: freed first */
  b2s_store_free(src->store);
  free(src->dchunk);
  b2s_frame_free(src->frame);
  free(src->chunk);
  free(src->buf);
  b2s_ctx_free(src->ctx);
  const char *path = src->path;
  memset(src, 0, sizeof *src);
  src->path = path;
}

int64_t cli_src_nchunks(const cli_src *src) {
  if (src->dframe)
    return src->committed;
  return src->frame ? b2s_frame_nchunks(src->frame) : src->chunk ? 1 : 0;
}

void cli_src_frame_err(const cli_src *src, int code) {
  const b2s_frame_error *e = b2s_frame_last_error(src->frame);
  int64_t id = -1;
  if (src->kind == CLI_KIND_SFRAME && e && e->nchunk >= 0 &&
      e->nchunk < b2s_frame_nchunks(src->frame))
    id = b2s_frame_index(src->frame)[e->nchunk];
  report_frame_err(src, e, code, id);
}

static int reserve(cli_src *src, size_t n) {
  if (n <= src->cap)
    return 0;
  uint8_t *p = realloc(src->buf, n);
  if (p == NULL) {
    cli_err("%s: out of memory (%zu bytes)", src->path, n);
    return B2S_E_NOMEM;
  }
  src->buf = p;
  src->cap = n;
  return 0;
}

static int chunk_file_desc(cli_src *src, int64_t i, cli_chunk *d) {
  if (i != 0) {
    cli_err("%s: no chunk %lld (a chunk file holds chunk 0 only)", src->path,
            (long long)i);
    return B2S_E_NCHUNK;
  }
  b2s_chunk_info_get(src->chunk, src->chunk_len, &d->info);  /* checked */
  d->nbytes = d->info.nbytes;
  d->cbytes = d->info.cbytes;
  d->stored = true;
  d->special = d->info.special;
  d->bytes = src->chunk;
  return 0;
}

/* A distributed frame's chunk i: always stored, in an object of its own
 * (entry: the object's number, which is i). */
static int dist_chunk_desc(cli_src *src, int64_t i, cli_chunk *d) {
  int rc = cli_dist_chunk_read(src, i, &d->info);
  if (rc < 0)
    return rc;
  d->nbytes = d->info.nbytes;
  d->cbytes = d->info.cbytes;
  d->stored = true;
  d->entry = i;
  d->special = d->info.special;
  d->bytes = src->dchunk;
  return 0;
}

int cli_src_chunk(cli_src *src, int64_t i, cli_chunk *d) {
  memset(d, 0, sizeof *d);
  d->index = i;
  if (src->dframe)
    return dist_chunk_desc(src, i, d);
  if (src->frame == NULL)
    return chunk_file_desc(src, i, d);
  b2s_frame *f = src->frame;
  int rc = b2s_frame_chunk_sizes(f, i, &d->cbytes, &d->nbytes);
  if (rc < 0) {
    cli_src_frame_err(src, rc);
    return rc;
  }
  d->entry = b2s_frame_index(f)[i];
  d->stored = d->entry >= 0;
  if ((rc = reserve(src, (size_t)d->cbytes)) < 0)
    return rc;
  rc = b2s_frame_chunk_read(f, i, src->buf, src->cap);
  if (rc < 0) {
    cli_src_frame_err(src, rc);
    return rc;
  }
  d->bytes = src->buf;
  b2s_chunk_info_get(d->bytes, (size_t)d->cbytes, &d->info);  /* checked */
  d->special = d->stored ? d->info.special : b2s_frame_entry_kind(d->entry);
  return 0;
}

int cli_src_decode(cli_src *src, int64_t i, const uint8_t **out) {
  int32_t nbytes;
  int rc;
  const uint8_t *whole = src->chunk;    /* chunk file or distributed chunk */
  size_t whole_len = src->chunk_len;
  if (src->frame == NULL) {
    cli_chunk d;
    rc = src->dframe ? dist_chunk_desc(src, i, &d) : chunk_file_desc(src, i, &d);
    if (rc < 0)
      return rc;
    nbytes = d.nbytes;
    if (src->dframe) {
      whole = d.bytes;
      whole_len = (size_t)d.cbytes;
    }
  } else if ((rc = b2s_frame_chunk_sizes(src->frame, i, NULL, &nbytes)) < 0) {
    cli_src_frame_err(src, rc);
    return rc;
  }
  if ((rc = reserve(src, nbytes ? (size_t)nbytes : 1)) < 0)
    return rc;
  /* uninitialised chunks write nothing: give them defined bytes */
  memset(src->buf, 0, (size_t)nbytes);
  if (src->frame == NULL) {
    rc = b2s_decompress(src->ctx, whole, whole_len, src->buf, (size_t)nbytes);
    if (rc < 0)
      cli_err("%s: chunk does not decompress: %s (chunk %lld)", src->path,
              b2s_strerror(rc), (long long)i);
  } else {
    rc = b2s_frame_chunk_decompress(src->frame, i, src->ctx, src->buf,
                                    (size_t)nbytes);
    if (rc < 0)
      cli_src_frame_err(src, rc);
  }
  if (rc >= 0 && rc != nbytes) {
    cli_err("%s: chunk %lld decoded to %d bytes instead of %d", src->path,
            (long long)i, rc, nbytes);
    rc = B2S_E_DECODE;
  }
  *out = src->buf;
  return rc;
}

/* ---- space accounting ------------------------------------------------------ */

typedef struct span {
  int64_t start, len;
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Stored chunks of the frame as (offset or chunk id, cbytes), sorted. */
static int stored_spans(cli_src *src, span **out, size_t *n) {
  b2s_frame *f = src->frame;
  int64_t nch = b2s_frame_nchunks(f);
  const int64_t *index = b2s_frame_index(f);
  span *s = malloc(nch > 0 ? (size_t)nch * sizeof *s : 1);
  if (s == NULL) {
    cli_err("%s: out of memory", src->path);
    return B2S_E_NOMEM;
  }
  size_t k = 0;
  for (int64_t i = 0; i < nch; i++) {
    int32_t cb;
    if (index[i] < 0)
      continue;
    int rc = b2s_frame_chunk_sizes(f, i, &cb, NULL);
    if (rc < 0) {
      cli_src_frame_err(src, rc);
      free(s);
      return rc;
    }
    s[k++] = (span){index[i], cb};
  }
  qsort(s, k, sizeof *s, span_cmp);
  *out = s;
  *n = k;
  return 0;
}

/* Bytes covered by the union of the spans (a chunk referenced twice is
 * stored once). */
static int64_t union_len(const span *s, size_t n) {
  int64_t total = 0, end = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    int64_t a = s[k].start > end ? s[k].start : end;
    int64_t b = s[k].start + s[k].len;
    if (b > a)
      total += b - a;
    if (b > end)
      end = b;
  }
  return total;
}

/* Chunk id of a sparse frame's chunk file name "XXXXXXXX.chunk", or -1. */
static int64_t chunk_file_id(const char *name) {
  if (strlen(name) != 14 || strcmp(name + 8, ".chunk") != 0)
    return -1;
  int64_t id = 0;
  for (int k = 0; k < 8; k++) {
    char c = name[k];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                   : -1;
    if (v < 0)
      return -1;
    id = id << 4 | v;
  }
  return id;
}

static const span *find_id(const span *s, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid].start < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && s[lo].start == id ? &s[lo] : NULL;
}

/* Sparse frame: every chunk file counts towards the size; a file no index
 * entry names, and bytes after a chunk's cbytes, are holes. */
static int sparse_space(cli_src *src, const span *s, size_t n,
                        int64_t *file_size, int64_t *holes) {
  DIR *d = opendir(src->path);
  if (d == NULL) {
    int rc = -errno;
    cli_err("%s: %s", src->path, strerror(-rc));
    return rc;
  }
  struct stat st;
  int rc = 0;
  *file_size = *holes = 0;
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    int64_t id = chunk_file_id(de->d_name);
    bool index_file = !strcmp(de->d_name, B2S_SFRAME_INDEX_FILE);
    if (id < 0 && !index_file)
      continue;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = -errno;
      cli_err("%s/%s: %s", src->path, de->d_name, strerror(-rc));
      break;
    }
    *file_size += st.st_size;
    if (index_file)
      continue;
    const span *ref = find_id(s, n, id);
    *holes += ref ? st.st_size - ref->len : st.st_size;
  }
  closedir(d);
  return rc;
}

int cli_src_space(cli_src *src, int64_t *file_size, int64_t *stored,
                  int64_t *holes) {
  struct stat st;
  if (src->frame == NULL) {
    b2s_chunk_info info;
    b2s_chunk_info_get(src->chunk, src->chunk_len, &info);  /* checked */
    *file_size = (int64_t)src->chunk_len;
    *stored = info.cbytes;
    *holes = *file_size - *stored;
    return 0;
  }
  span *s;
  size_t n;
  int rc = stored_spans(src, &s, &n);
  if (rc < 0)
    return rc;
  if (src->kind == CLI_KIND_SFRAME) {
    size_t k = 0;   /* the same chunk file referenced twice counts once */
    for (size_t r = 0; r < n; r++)
      if (k == 0 || s[r].start != s[k - 1].start)
        s[k++] = s[r];
    n = k;
    *stored = 0;
    for (size_t r = 0; r < n; r++)
      *stored += s[r].len;
    rc = sparse_space(src, s, n, file_size, holes);
  } else if (stat(src->path, &st) < 0) {
    rc = -errno;
    cli_err("%s: %s", src->path, strerror(-rc));
  } else {
    *file_size = st.st_size - src->offset;   /* from the frame's start */
    *stored = union_len(s, n);
    *holes = b2s_frame_header_get(src->frame)->cbytes - *stored;
  }
  free(s);
  return rc;
}
