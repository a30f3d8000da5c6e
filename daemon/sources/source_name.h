/* Stream names of a Stream V2 series (docs/SOURCES.md section 2): the
 * source's name pattern, and a suffix that keeps a series off every name
 * already taken, so a series id seen before (a detector restarted, the
 * same series armed again) never reopens another series' frame.  I/O
 * thread only. */
#ifndef B2SD_SOURCE_NAME_H
#define B2SD_SOURCE_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "b2sd.h"
#include "b2s_stream2.h"

/* Suffixes tried before a series is given up as unnameable. */
#define B2SD_S2_SUFFIX_MAX 9999

/* The stream name of channel ch of the series that start opened: the
 * pattern's placeholders replaced, characters a stream name does not
 * allow as '_', and with n >= 2 ".n" right after the pattern's last
 * {series_id} or {series_unique_id}.  0, or B2S_E_STREAM_NAME when the
 * result is not a valid stream name (too long, say). */
int b2sd_s2_name(const char *pattern, const b2s_s2_msg *start,
                 b2s_s2_str ch, uint32_t n, char *out, size_t cap);

/* Whether a stream named `name`, made from template_name, would not be
 * a new stream of its own: a stream of the daemon has the name (open,
 * closing, or configured), or something exists where its frame or its
 * records frame would be. */
bool b2sd_s2_name_taken(b2sd_server *srv, const char *template_name,
                        const char *name);

/* The series' suffix: 1 (none) when no name the series would use is
 * taken (b2sd_s2_name_taken: each channel's stream and its companions
 * .flatfield, .pixel_mask, .countrate), else the smallest n from 2 for
 * which none is.  0 when every
 * suffix up to B2SD_S2_SUFFIX_MAX is taken. */
uint32_t b2sd_s2_suffix(b2sd_server *srv, const char *pattern,
                        const char *template_name, const b2s_s2_msg *start);

#endif
