/* The series metadata of a detector's frame read for its NeXus NXmx
 * export: which Stream V2 start field (docs/SOURCES.md 4: each is a
 * series key of the same name) goes to which NeXus field, as one declared
 * table (cli_nxmeta.c, docs/EXPORT.md 2.4), the values parsed into a
 * struct the HDF5 side writes.  No HDF5 here, so the fuzz target links it.
 *
 * Ownership: a cli_nxmeta owns its strings; cli_nxmeta_fini frees them. */
#ifndef B2S_CLI_NXMETA_H
#define B2S_CLI_NXMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The rows of the table, in its order. */
enum cli_nx_field {
  NXF_ARM_DATE,
  NXF_SERIES_DATE,
  NXF_BEAM_CENTER_X,
  NXF_BEAM_CENTER_Y,
  NXF_BIT_DEPTH_READOUT,
  NXF_CHANNEL,
  NXF_COUNT_TIME,
  NXF_COUNTRATE_ENABLED,
  NXF_DESCRIPTION,
  NXF_SERIAL_NUMBER,
  NXF_DETECTOR_DISTANCE,
  NXF_DETECTOR_TRANSLATION,
  NXF_FLATFIELD_ENABLED,
  NXF_FRAME_TIME,
  NXF_GONIOMETER,
  NXF_IMAGE_SIZE_X,
  NXF_IMAGE_SIZE_Y,
  NXF_INCIDENT_ENERGY,
  NXF_INCIDENT_WAVELENGTH,
  NXF_NUMBER_OF_IMAGES,
  NXF_PIXEL_MASK_ENABLED,
  NXF_PIXEL_SIZE_X,
  NXF_PIXEL_SIZE_Y,
  NXF_SATURATION_VALUE,
  NXF_SENSOR_MATERIAL,
  NXF_SENSOR_THICKNESS,
  NXF_THRESHOLD_ENERGY,
  NXF_VIRTUAL_PIXEL_ENABLED,
  NXF_BEAMLINE,
  NXF_COUNT
};

/* How a field's value is read from the series map. */
enum cli_nx_kind {
  NXK_FLOAT,                       /* any msgpack number */
  NXK_INT,                         /* an integer (or a float of one) */
  NXK_BOOL,
  NXK_TEXT,
  NXK_DATE,                        /* RFC 3339 text, made ns since the epoch */
  NXK_VEC3,                        /* an array of 3 numbers */
  NXK_CHANNEL,                     /* a map channel -> number: the frame's */
  NXK_AXES,                        /* the goniometer map */
  NXK_BEAMLINE,                    /* the beamline map (docs/EXPORT.md 2.6) */
};

typedef struct cli_nx_row {
  const char *key;                 /* the series key: the Stream V2 field */
  int kind;                        /* enum cli_nx_kind */
  const char *field;               /* NeXus field under /entry it is written
                                      to as it is, NULL: used by the layout */
  const char *units;               /* its units attribute, or NULL */
} cli_nx_row;

extern const cli_nx_row cli_nx_table[NXF_COUNT];

/* A goniometer axis with a place in NXmx (docs/EXPORT.md 2.5). */
enum { CLI_NX_MAX_AXES = 5 };
typedef struct cli_nx_axis {
  const char *name;                /* omega, kappa, chi, phi, two_theta */
  double start, increment;         /* deg */
} cli_nx_axis;

/* The beamline facts a detector does not know (series key `beamline`, or
 * the export command's options). */
typedef struct cli_nx_beamline {
  char *source_name, *source_type, *source_probe;
  char *instrument_name, *sample_name;
  bool has_flux;
  double beam_flux;                /* photons per second */
} cli_nx_beamline;

typedef struct cli_nxmeta {
  bool has[NXF_COUNT];
  double num[NXF_COUNT];           /* FLOAT, CHANNEL */
  int64_t i[NXF_COUNT];            /* INT, BOOL (0/1), DATE (ns UTC) */
  char *text[NXF_COUNT];           /* TEXT */
  double vec[3];                   /* detector_translation (m) */
  cli_nx_axis axes[CLI_NX_MAX_AXES];
  int naxes;
  cli_nx_beamline bl;
} cli_nxmeta;

/* Read the series map (msgpack, `len` bytes) into m: every key of the
 * table whose value has the row's kind; others are left unset.  Returns 0,
 * or B2S_E_MSGPACK when the map is malformed (m then holds what was read
 * before). */
int cli_nxmeta_read(const uint8_t *map, size_t len, cli_nxmeta *m);
void cli_nxmeta_fini(cli_nxmeta *m);

/* The row of a series key, or NULL. */
const cli_nx_row *cli_nx_lookup(const char *key, size_t n);

/* NXsource's enumerations: whether v is one of its `type` (probe false)
 * or `probe` values. */
bool cli_nx_source_value_ok(const char *v, bool probe);

/* RFC 3339 / ISO 8601 date and time ("2026-11-28T10:00:00.000+00:00",
 * "...Z", a space for the T, up to 9 fractional digits) to ns since the
 * epoch, UTC; years 1970-2261.  0 or -1. */
int cli_nx_parse_date(const char *s, size_t n, int64_t *ns);
/* ns since the epoch as "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ". */
void cli_nx_format_date(int64_t ns, char out[40]);

#endif
