/* CurveZMQ key files, as `b2stream keygen` writes them and the daemon and
 * clients read them.  No sockets, no logging.
 *
 * Two formats, both line-based text:
 *  - a key file (a secret key; `b2stream keygen` writes the key and a
 *    newline): the first key counts;
 *  - an authorized keys file (b2streamd's curve.authorized_keys_file): one
 *    client public key per line.
 * Z85 has '#' too, so a line is a '#' comment only when its first word is
 * not a key.  Lines are taken as fgets() with a B2S_CURVE_KEY_LINE_MAX
 * buffer gives them: a longer line counts as several, and a line ends for
 * the parser at a NUL byte.  The parsers work on text in memory (any bytes,
 * no NUL terminator needed); the _read functions read a file of at most
 * B2S_CURVE_KEY_FILE_MAX bytes and parse it. */
#ifndef B2S_CURVE_KEY_H
#define B2S_CURVE_KEY_H

#include <stddef.h>
#include <stdint.h>

#define B2S_CURVE_KEY_Z85_LEN 40
#define B2S_CURVE_KEY_LEN 32             /* a key in binary */
#define B2S_CURVE_KEY_LINE_MAX 1024
/* Far above any real key list (some 25000 keys), small enough to read whole. */
#define B2S_CURVE_KEY_FILE_MAX (1024 * 1024)

/* The first key of text: the first word of a line when it is a valid Z85
 * key (40 characters).  Blank lines are skipped, and so are lines starting
 * with '#'; words are separated by space, tab, CR or LF.  Returns 0 with
 * the key and a NUL in z85; B2S_E_ARG when a line before any key is
 * neither, or there is no key. */
int b2s_curve_key_parse(const char *text, size_t len,
                        char z85[B2S_CURVE_KEY_Z85_LEN + 1]);

/* b2s_curve_key_parse on the file at path.  -errno when the file cannot be
 * read, -EFBIG when it is larger than B2S_CURVE_KEY_FILE_MAX. */
int b2s_curve_key_read(const char *path, char z85[B2S_CURVE_KEY_Z85_LEN + 1]);

/* Every key of an authorized keys text, one per line: after leading and
 * trailing white space (isspace in the C locale) is trimmed, a line is
 * blank, or starts with a key followed by the end of the line, a space or
 * a tab (text after it is ignored), or else starts with '#' (a comment).
 * Returns the number of keys with *keys a malloc'd array of them in file
 * order (NULL when there are none; the caller frees it); B2S_E_ARG when a
 * line is none of these, with its number (from 1) in *bad_line;
 * B2S_E_NOMEM.  *keys is NULL on failure. */
int b2s_curve_authorized_parse(const char *text, size_t len,
                               uint8_t (**keys)[B2S_CURVE_KEY_LEN],
                               int *bad_line);

/* b2s_curve_authorized_parse on the file at path; file errors as for
 * b2s_curve_key_read. */
int b2s_curve_authorized_read(const char *path,
                              uint8_t (**keys)[B2S_CURVE_KEY_LEN],
                              int *bad_line);

#endif
