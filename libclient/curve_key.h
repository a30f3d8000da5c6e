/* CurveZMQ key files, as `b2stream keygen` writes them and the daemon and
 * clients read them.  No sockets, no logging. */
#ifndef B2S_CURVE_KEY_H
#define B2S_CURVE_KEY_H

#define B2S_CURVE_KEY_Z85_LEN 40

/* The first key of the file at path: the first word of a line when it is a
 * valid Z85 key (40 characters).  Blank lines are skipped, and so are lines
 * starting with '#' (Z85 has '#' too, so a line is a comment only when its
 * first word is not a key).  Returns 0 with the key and a NUL in z85;
 * B2S_E_ARG when a line before any key is neither, or there is no key;
 * -errno when the file cannot be read. */
int b2s_curve_key_read(const char *path, char z85[B2S_CURVE_KEY_Z85_LEN + 1]);

#endif
