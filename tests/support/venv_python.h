/* The reference venv's python (python-blosc2, h5py, hdf5plugin pinned by
 * scripts/make-venv): $B2S_VENV, else $B2S_VENV_DEFAULT (the source root's
 * .venv, set by meson).  Fills py and returns 1, or returns 0 (and says
 * the check is skipped) when there is none. */
#ifndef TS_VENV_PYTHON_H
#define TS_VENV_PYTHON_H

#include <stddef.h>

int ts_venv_python(char *py, size_t cap);

#endif
