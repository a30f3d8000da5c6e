/* The layout rules of docs/ARCHITECTURE.md, checked against the tree:
 * every `#include "..."` of a room names a header of the same room or of
 * a room the dependency rule lets it use (a sub-room, "room/folder", also
 * uses what its room may use outside it; a room outside uses all of another
 * room's sub-rooms by naming the room); header and source file names
 * are unique; no source or document refers to a path outside the
 * repository.  B2S_SOURCE_ROOT is the tree, the rule block is read from
 * its docs/ARCHITECTURE.md. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "textfile.h"
#include "ts.h"

#define MAX_ROOMS 32
#define MAX_FILES 4096
#define NAME_MAX_LEN 64

typedef struct room {
  char name[NAME_MAX_LEN];
  char uses[MAX_ROOMS][NAME_MAX_LEN];
  int nuses;
} room;

typedef struct file {
  char *path;                      /* relative to the root */
  char room[NAME_MAX_LEN];
  const char *base;                /* file name within path */
} file;

static room rooms[MAX_ROOMS];
static int nrooms;
static file files[MAX_FILES];
static int nfiles;
static const char *root;

/* One rule line: "room: dep dep ...". */
static void parse_rule_line(char *line) {
  char *colon = strchr(line, ':');
  assert_non_null(colon);
  *colon = '\0';
  assert_true(nrooms < MAX_ROOMS);
  room *r = &rooms[nrooms++];
  snprintf(r->name, sizeof r->name, "%s", line);
  for (char *tok = strtok(colon + 1, " \t"); tok; tok = strtok(NULL, " \t"))
    snprintf(r->uses[r->nuses++], NAME_MAX_LEN, "%s", tok);
}

static void load_rule(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/ARCHITECTURE.md", root);
  char *doc = ts_read_text(path, NULL);
  assert_non_null(doc);
  char *begin = strstr(doc, "<!-- include-rule: begin -->");
  char *end = strstr(doc, "<!-- include-rule: end -->");
  assert_non_null(begin);
  assert_non_null(end);
  *end = '\0';
  char *fence = strstr(begin, "```");
  assert_non_null(fence);
  char *line = strchr(fence, '\n') + 1;
  while (line && *line && strncmp(line, "```", 3) != 0) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    if (*line)
      parse_rule_line(line);
    line = nl ? nl + 1 : NULL;
  }
  free(doc);
  assert_true(nrooms >= 8);
}

static const room *find_room(const char *name) {
  for (int i = 0; i < nrooms; i++)
    if (strcmp(rooms[i].name, name) == 0)
      return &rooms[i];
  return NULL;
}

static bool skipped_dir(const char *rel) {
  static const char *skip[] = {".git", ".venv", "tests/vectors",
                               "tests/fuzz/corpus", "__pycache__", NULL};
  if (strncmp(rel, "build", 5) == 0 || strncmp(rel, "b2stream-demo", 13) == 0)
    return true;
  for (int i = 0; skip[i]; i++) {
    size_t n = strlen(skip[i]);
    if (strncmp(rel, skip[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
      return true;
    const char *last = strrchr(rel, '/');
    if (strcmp(last ? last + 1 : rel, skip[i]) == 0)
      return true;
  }
  return rel[0] == '.';
}

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static void walk(const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  DIR *d = opendir(path);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", root, sub);
    struct stat sb;
    if (stat(full, &sb) < 0)
      continue;
    if (S_ISDIR(sb.st_mode)) {
      if (!skipped_dir(sub))
        walk(sub);
    } else if (*rel && (has_suffix(sub, ".c") || has_suffix(sub, ".h") ||
                        has_suffix(sub, ".md") || has_suffix(sub, ".py") ||
                        has_suffix(sub, "meson.build"))) {
      assert_true(nfiles < MAX_FILES);
      file *f = &files[nfiles++];
      f->path = strdup(sub);
      size_t rl = strcspn(sub, "/");
      snprintf(f->room, sizeof f->room, "%.*s", (int)rl, sub);
      const char *slash = strrchr(f->path, '/');
      f->base = slash ? slash + 1 : f->path;
    }
  }
  closedir(d);
}

/* The rule's sub-room holding path (the longest "room/folder" its
 * folder starts with), else its top-level room. */
static void assign_room(file *f) {
  size_t best = 0;
  for (int i = 0; i < nrooms; i++) {
    size_t n = strlen(rooms[i].name);
    if (strchr(rooms[i].name, '/') && n > best &&
        strncmp(f->path, rooms[i].name, n) == 0 && f->path[n] == '/') {
      snprintf(f->room, sizeof f->room, "%s", rooms[i].name);
      best = n;
    }
  }
}

static int setup(void **state) {
  (void)state;
  root = getenv("B2S_SOURCE_ROOT");
  if (root == NULL)
    return -1;
  load_rule();
  walk("");
  for (int i = 0; i < nfiles; i++)
    assign_room(&files[i]);
  return 0;
}

static bool is_code(const file *f) {
  return has_suffix(f->path, ".c") || has_suffix(f->path, ".h");
}

static const file *find_header(const char *name) {
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  for (int i = 0; i < nfiles; i++)
    if (has_suffix(files[i].path, ".h") && strcmp(files[i].base, base) == 0)
      return &files[i];
  return NULL;
}

/* Whether name is top or one of its sub-rooms ("top/..."). */
static bool within(const char *name, const char *top) {
  size_t n = strlen(top);
  return strncmp(name, top, n) == 0 && (name[n] == '\0' || name[n] == '/');
}

static bool may_use(const room *r, const char *other) {
  if (strcmp(r->name, other) == 0)
    return true;
  for (int i = 0; i < r->nuses; i++)
    if (strcmp(r->uses[i], other) == 0 ||
        (!strchr(r->uses[i], '/') && within(other, r->uses[i]) &&
         !within(r->name, r->uses[i])))
      return true;   /* named, or a sub-room of a room named from outside */
  const char *slash = strchr(r->name, '/');
  if (slash) {       /* a sub-room uses what its room uses outside it */
    char top[NAME_MAX_LEN];
    snprintf(top, sizeof top, "%.*s", (int)(slash - r->name), r->name);
    const room *parent = find_room(top);
    if (parent && !within(other, top))
      return may_use(parent, other);
  }
  return false;
}

/* Every room with code is in the rule, and every include follows it. */
static void test_includes_follow_rule(void **state) {
  (void)state;
  int bad = 0, checked = 0;
  for (int i = 0; i < nfiles; i++) {
    if (!is_code(&files[i]))
      continue;
    const room *r = find_room(files[i].room);
    if (r == NULL) {
      printf("%s: room %s is not in the dependency rule\n", files[i].path,
             files[i].room);
      bad++;
      continue;
    }
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", root, files[i].path);
    char *text = ts_read_text(full, NULL);
    assert_non_null(text);
    for (char *p = strstr(text, "#include \""); p;
         p = strstr(p + 1, "#include \"")) {
      char name[256];
      if ((p != text && p[-1] != '\n') ||
          sscanf(p + 10, "%255[^\"]", name) != 1)
        continue;   /* only preprocessor lines, not strings or comments */
      const file *h = find_header(name);
      checked++;
      if (h == NULL) {
        printf("%s: includes \"%s\", which is not in the tree\n",
               files[i].path, name);
        bad++;
      } else if (!may_use(r, h->room)) {
        printf("%s: includes %s of room %s, which %s may not use\n",
               files[i].path, h->path, h->room, r->name);
        bad++;
      }
    }
    free(text);
  }
  printf("%d include lines checked, %d break the rule\n", checked, bad);
  assert_true(checked > 500);
  assert_int_equal(bad, 0);
}

/* A room cut into sub-rooms has each of its folders' code in one of them,
 * so no folder escapes the rule between them. */
static void test_subrooms_cover_folders(void **state) {
  (void)state;
  int bad = 0, subrooms = 0;
  for (int i = 0; i < nrooms; i++)
    subrooms += strchr(rooms[i].name, '/') != NULL;
  for (int i = 0; i < nfiles; i++) {
    if (!is_code(&files[i]) || strchr(files[i].room, '/'))
      continue;
    bool cut = false;
    for (int k = 0; k < nrooms; k++)
      cut |= strchr(rooms[k].name, '/') && within(rooms[k].name, files[i].room);
    const char *rest = files[i].path + strlen(files[i].room) + 1;
    if (cut && strchr(rest, '/')) {
      printf("%s: in no sub-room of %s the rule lists\n", files[i].path,
             files[i].room);
      bad++;
    }
  }
  printf("%d sub-rooms in the rule, %d files outside them\n", subrooms, bad);
  assert_true(subrooms >= 8);
  assert_int_equal(bad, 0);
}

/* Header and source names are unique, so a name says where it lives. */
static void test_code_names_unique(void **state) {
  (void)state;
  int dups = 0;
  for (int i = 0; i < nfiles; i++)
    for (int j = i + 1; j < nfiles; j++)
      if (is_code(&files[i]) && is_code(&files[j]) &&
          strcmp(files[i].base, files[j].base) == 0) {
        printf("%s and %s share a name\n", files[i].path, files[j].path);
        dups++;
      }
  assert_int_equal(dups, 0);
}

/* A clone alone builds, tests and explains itself. */
static void test_no_path_outside(void **state) {
  (void)state;
  static const char *outside[] = {"../shared", "shared/DESIGN.md",
                                  "shared/spec", "shared/vectors", NULL};
  int bad = 0;
  for (int i = 0; i < nfiles; i++) {
    if (strcmp(files[i].base, "test_layout.c") == 0)
      continue;
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", root, files[i].path);
    char *text = ts_read_text(full, NULL);
    assert_non_null(text);
    for (int k = 0; outside[k]; k++)
      if (strstr(text, outside[k])) {
        printf("%s refers to %s, outside the repository\n", files[i].path,
               outside[k]);
        bad++;
      }
    free(text);
  }
  assert_int_equal(bad, 0);
}

/* acq/ is the acquisition API's pure parts (docs/ARCHITECTURE.md): its
 * rule line names exactly the rooms its code includes, and it includes no
 * header of threads, sockets, ZeroMQ, HTTP or logging, so the daemon's
 * restructuring cannot pull it into the I/O path unnoticed. */
static void test_acq_pure(void **state) {
  (void)state;
  static const char *banned[] = {"<pthread.h>", "<zmq.h>", "<sys/socket.h>",
                                 "<microhttpd.h>", "<syslog.h>", "<netdb.h>",
                                 "<sys/epoll.h>", NULL};
  const room *r = find_room("acq");
  assert_non_null(r);
  char used[MAX_ROOMS][NAME_MAX_LEN];
  int nused = 0, bad = 0, nsrc = 0;
  for (int i = 0; i < nfiles; i++) {
    if (!is_code(&files[i]) || strcmp(files[i].room, "acq") != 0)
      continue;
    nsrc++;
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", root, files[i].path);
    char *text = ts_read_text(full, NULL);
    assert_non_null(text);
    for (int k = 0; banned[k]; k++)
      if (strstr(text, banned[k])) {
        printf("%s includes %s; acq/ has no threads, sockets or logging\n",
               files[i].path, banned[k]);
        bad++;
      }
    for (char *p = strstr(text, "#include \""); p;
         p = strstr(p + 1, "#include \"")) {
      char name[256];
      if ((p != text && p[-1] != '\n') ||
          sscanf(p + 10, "%255[^\"]", name) != 1)
        continue;
      const file *h = find_header(name);
      if (h == NULL || strcmp(h->room, "acq") == 0)
        continue;
      int k = 0;
      while (k < nused && strcmp(used[k], h->room) != 0)
        k++;
      if (k == nused && nused < MAX_ROOMS)
        snprintf(used[nused++], NAME_MAX_LEN, "%s", h->room);
    }
    free(text);
  }
  assert_true(nsrc >= 8);
  for (int i = 0; i < r->nuses; i++) {
    int k = 0;
    while (k < nused && strcmp(used[k], r->uses[i]) != 0)
      k++;
    if (k == nused) {
      printf("the rule lets acq use %s, which its code does not include\n",
             r->uses[i]);
      bad++;
    }
  }
  for (int k = 0; k < nused; k++)
    if (!may_use(r, used[k]))
      bad++;                         /* reported by test_includes_follow_rule */
  /* who may include it: the daemon (and its sub-rooms), the tools and the
     tests only */
  for (int i = 0; i < nrooms; i++)
    if (strcmp(rooms[i].name, "acq") != 0 && may_use(&rooms[i], "acq") &&
        strcmp(rooms[i].name, "daemon") != 0 &&
        strncmp(rooms[i].name, "daemon/", 7) != 0 &&
        strcmp(rooms[i].name, "tools") != 0 &&
        strcmp(rooms[i].name, "tests") != 0) {
      printf("the rule lets %s use acq; only daemon, tools and tests may\n",
             rooms[i].name);
      bad++;
    }
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_includes_follow_rule),
      cmocka_unit_test(test_subrooms_cover_folders),
      cmocka_unit_test(test_code_names_unique),
      cmocka_unit_test(test_no_path_outside),
      cmocka_unit_test(test_acq_pure),
  };
  return ts_run_tests(tests, setup, NULL);
}
