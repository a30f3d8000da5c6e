/* libyaml events -> a small tree of nodes that keep their line and column.
 *
 * The tree is what the schema walk reads; building it first lets streams
 * refer to templates written further down the file.  Everything about it is
 * bounded before a byte is stored: nesting depth (the schema's own depth),
 * entries per mapping or sequence, string length and the node count.
 * Aliases are refused: expanding them is how a small document becomes a
 * huge one, and templates cover the need.  All nodes and strings live in
 * one arena freed at once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_internal.h"

#define BLOCK_BYTES (64 * 1024)

struct cfg_block {
  struct cfg_block *next;
  size_t used, cap;
  max_align_t data[];
};

static void *arena_alloc(cfg_tree *t, size_t n) {
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  struct cfg_block *b = t->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > BLOCK_BYTES ? n : BLOCK_BYTES;
    b = malloc(sizeof *b + cap);
    if (!b)
      return NULL;
    b->next = t->blocks;
    b->used = 0;
    b->cap = cap;
    t->blocks = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  return p;
}

void b2s_cfg_tree_fini(cfg_tree *t) {
  struct cfg_block *b = t->blocks;
  while (b) {
    struct cfg_block *next = b->next;
    free(b);
    b = next;
  }
  memset(t, 0, sizeof *t);
}

static cfg_node *node_new(cfg_tree *t, int kind, int line, int col) {
  cfg_node *n = arena_alloc(t, sizeof *n);
  if (!n)
    return NULL;
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->line = line;
  n->col = col;
  n->str = "";
  t->nnodes++;
  return n;
}

static int node_set_str(cfg_tree *t, cfg_node *n, const char *s, size_t len) {
  char *p = arena_alloc(t, len + 1);
  if (!p)
    return B2S_E_NOMEM;
  memcpy(p, s, len);
  p[len] = '\0';
  n->str = p;
  n->len = len;
  return 0;
}

static void node_append(cfg_node *parent, cfg_node *child) {
  if (parent->last)
    parent->last->next = child;
  else
    parent->child = child;
  parent->last = child;
  parent->n++;
}

bool b2s_cfg_node_is_null(const cfg_node *n) {
  if (n->kind != CN_SCALAR || n->quoted)
    return false;
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
  for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
    if (strcmp(n->str, nulls[i]) == 0)
      return true;
  return false;
}

const char *b2s_cfg_node_kind_name(const cfg_node *n) {
  if (n->kind == CN_MAP)
    return "a mapping";
  if (n->kind == CN_SEQ)
    return "a list";
  return b2s_cfg_node_is_null(n) ? "nothing" : "a scalar";
}

cfg_node *b2s_cfg_tree_from_text(cfg_tree *t, const char *text, bool quoted) {
  if (quoted || text[0] != '[') {
    cfg_node *n = node_new(t, CN_SCALAR, 0, 0);
    if (!n || node_set_str(t, n, text, strlen(text)) < 0)
      return NULL;
    n->quoted = quoted;
    return n;
  }
  /* Schema defaults only: "[a, b]" with plain items, no nesting. */
  cfg_node *seq = node_new(t, CN_SEQ, 0, 0);
  const char *p = text + 1;
  while (seq && *p && *p != ']') {
    while (*p == ' ' || *p == ',')
      p++;
    size_t n = strcspn(p, ",]");
    while (n && p[n - 1] == ' ')
      n--;
    if (n) {
      cfg_node *item = node_new(t, CN_SCALAR, 0, 0);
      if (!item || node_set_str(t, item, p, n) < 0)
        return NULL;
      node_append(seq, item);
    }
    p += n;
    while (*p == ' ')
      p++;
  }
  return seq;
}

static int yaml_fail(cfg_ctx *c, const yaml_parser_t *p) {
  if (p->error == YAML_MEMORY_ERROR)
    return b2s_cfg_nomem(c);
  if (p->error == YAML_READER_ERROR)
    return b2s_cfg_fail(c, NULL, "", "invalid input at byte %zu: %s",
                    p->problem_offset, p->problem ? p->problem : "?");
  cfg_node at = {.line = (int)p->problem_mark.line + 1,
                 .col = (int)p->problem_mark.column + 1};
  if (p->context)
    return b2s_cfg_fail(c, &at, "", "YAML syntax error: %s (%s at line %d)",
                    p->problem ? p->problem : "?", p->context,
                    (int)p->context_mark.line + 1);
  return b2s_cfg_fail(c, &at, "", "YAML syntax error: %s",
                  p->problem ? p->problem : "?");
}

typedef struct builder {
  cfg_ctx *c;
  cfg_node *stack[CFG_MAX_DEPTH];
  int depth;
  int docs;
} builder;

static int attach(builder *b, cfg_node *n) {
  cfg_ctx *c = b->c;
  if (c->tree.nnodes > CFG_MAX_NODES)
    return b2s_cfg_fail(c, n, "", "more than %d values in the configuration",
                    CFG_MAX_NODES);
  if (b->depth == 0) {
    c->tree.root = n;
    return 0;
  }
  cfg_node *parent = b->stack[b->depth - 1];
  size_t limit = parent->kind == CN_MAP ? 2 * CFG_MAX_ENTRIES : CFG_MAX_ENTRIES;
  if (parent->n >= limit)
    return b2s_cfg_fail(c, n, "", "more than %d entries in one %s",
                    CFG_MAX_ENTRIES, parent->kind == CN_MAP ? "mapping" : "list");
  if (parent->kind == CN_MAP && parent->n % 2 == 0 && n->kind != CN_SCALAR)
    return b2s_cfg_fail(c, n, "", "a mapping key must be a plain string");
  node_append(parent, n);
  return 0;
}

static int on_scalar(builder *b, const yaml_event_t *ev, int line, int col) {
  cfg_ctx *c = b->c;
  const char *s = (const char *)ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  cfg_node at = {.line = line, .col = col};
  if (len > B2S_CONFIG_STRING_MAX)
    return b2s_cfg_fail(c, &at, "", "string longer than %d bytes",
                    B2S_CONFIG_STRING_MAX);
  if (memchr(s, '\0', len))
    return b2s_cfg_fail(c, &at, "", "string contains a NUL character");
  cfg_node *n = node_new(&c->tree, CN_SCALAR, line, col);
  if (!n || node_set_str(&c->tree, n, s, len) < 0)
    return b2s_cfg_nomem(c);
  n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
  return attach(b, n);
}

static int on_open(builder *b, int kind, int line, int col) {
  cfg_ctx *c = b->c;
  cfg_node at = {.line = line, .col = col};
  if (b->depth == CFG_MAX_DEPTH)
    return b2s_cfg_fail(c, &at, "", "nesting deeper than the configuration "
                    "schema allows (%d levels)", CFG_MAX_DEPTH);
  cfg_node *n = node_new(&c->tree, kind, line, col);
  if (!n)
    return b2s_cfg_nomem(c);
  int rc = attach(b, n);
  if (rc == 0)
    b->stack[b->depth++] = n;
  return rc;
}

static int on_event(builder *b, const yaml_event_t *ev, bool *done) {
  int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
  cfg_node at = {.line = line, .col = col};
  switch (ev->type) {
  case YAML_STREAM_END_EVENT:
    *done = true;
    return 0;
  case YAML_DOCUMENT_START_EVENT:
    if (++b->docs > 1)
      return b2s_cfg_fail(b->c, &at, "", "only one YAML document is allowed");
    return 0;
  case YAML_ALIAS_EVENT:
    return b2s_cfg_fail(b->c, &at, "", "YAML aliases are not supported "
                    "(use templates)");
  case YAML_SCALAR_EVENT:
    return on_scalar(b, ev, line, col);
  case YAML_SEQUENCE_START_EVENT:
    return on_open(b, CN_SEQ, line, col);
  case YAML_MAPPING_START_EVENT:
    return on_open(b, CN_MAP, line, col);
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    b->depth--;
    return 0;
  default:
    return 0;
  }
}

int b2s_cfg_tree_parse(cfg_ctx *c, const char *text, size_t len) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return b2s_cfg_nomem(c);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  builder b = {.c = c};
  bool done = false;
  int rc = 0;
  while (!done && rc == 0) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      rc = yaml_fail(c, &p);
      break;
    }
    rc = on_event(&b, &ev, &done);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  return rc;
}
