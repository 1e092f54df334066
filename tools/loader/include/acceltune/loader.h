/* libacceltune: applies a tuned acceltune configuration to this process's environment, for jobs
 * that cannot be started through `acceltune exec`. Call it first thing in main(), before any
 * communication library (NCCL, UCX, MPI) initialises and before the process starts threads:
 * those libraries read their variables once, and setenv() is not safe while other threads read
 * the environment.
 *
 *   #include <acceltune/loader.h>
 *   if (acceltune_apply(getenv("ACCELTUNE_CONFIG"), 0) != ACCELTUNE_OK)
 *     fprintf(stderr, "%s\n", acceltune_last_error());
 *
 * `path` may be
 *   - a study directory (what `acceltune search` writes): its best.json gives the variables (the
 *     config chosen for the most sizes, as `acceltune export --format env`), its study.json the
 *     fingerprint of the machine that measured it;
 *   - a best.json file inside a study directory (study.json beside it gives the fingerprint);
 *   - an exported KEY=VALUE file (`acceltune export --format nccl-conf`, `env`, `ucx-env`) whose
 *     header carries a line "# acceltune fingerprint: ID".
 * Only variables named NCCL_*, UCX_*, OMPI_MCA_* and MPIR_CVAR_* are set; others in the file are
 * skipped (ACCELTUNE_E_PREFIX when nothing else is wrong and ACCELTUNE_STRICT is given). */
#ifndef ACCELTUNE_LOADER_H
#define ACCELTUNE_LOADER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Flags, or-ed. */
#define ACCELTUNE_OVERRIDE 0x1u /* replace variables the user already set (default: keep them) */
#define ACCELTUNE_FORCE 0x2u    /* apply even when the fingerprint is absent or another machine's */
#define ACCELTUNE_STRICT 0x4u   /* fail when the file names a variable outside the known prefixes */
#define ACCELTUNE_DRY_RUN 0x8u  /* check and count, set nothing */

/* Return codes: 0 on success, a positive code naming what went wrong otherwise; the text of the
 * last failure in this thread is acceltune_last_error(). */
enum acceltune_status {
  ACCELTUNE_OK = 0,
  ACCELTUNE_E_ARGUMENT = 1,    /* path is NULL or empty, or an unknown flag */
  ACCELTUNE_E_READ = 2,        /* the path does not exist or cannot be read */
  ACCELTUNE_E_FORMAT = 3,      /* not a study directory, best.json or KEY=VALUE export */
  ACCELTUNE_E_FINGERPRINT = 4, /* measured on other hardware, or carries no fingerprint */
  ACCELTUNE_E_PREFIX = 5,      /* ACCELTUNE_STRICT and a variable of an unknown prefix */
  ACCELTUNE_E_SETENV = 6       /* setenv() failed */
};

/* Sets the configuration's variables; see above for `path` and the flags. Nothing is set unless
 * every check passes. */
int acceltune_apply(const char* path, unsigned flags);

/* After a successful acceltune_apply in this thread: how many variables it set, and how many it
 * left because the user had set them (without ACCELTUNE_OVERRIDE). */
int acceltune_applied_count(void);
int acceltune_kept_count(void);

/* One line describing the last failure of acceltune_apply in this thread ("" after a success). */
const char* acceltune_last_error(void);

/* This machine's hardware fingerprint, the `id` that `acceltune probe --json` prints. */
const char* acceltune_fingerprint(void);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char* acceltune_loader_version(void);

#ifdef __cplusplus
}
#endif

#endif
