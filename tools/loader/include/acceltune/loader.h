/* libacceltune: applies a tuned acceltune configuration to this process's environment, for jobs
 * that cannot be started through `acceltune exec`. Call it first thing in main(), before any
 * communication library (NCCL, UCX, MPI) initialises and before the process starts threads:
 * those libraries read their variables once, and setenv() is not safe while other threads read
 * the environment. It only sets variables: it reads a few small files, loads no library (it
 * needs none of CUDA, NCCL, UCX, MPI, verbs or hwloc), initialises no device, starts no thread.
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
 *     header carries the line "# acceltune fingerprint_fields: {...}".
 * A value "default" leaves its variable unset (the library decides). Only variables named NCCL_*,
 * UCX_*, OMPI_MCA_* and MPIR_CVAR_* are set; others in the file are skipped (ACCELTUNE_E_PREFIX
 * when nothing else is wrong and ACCELTUNE_STRICT is given). A FIFO, a directory or a device where
 * a file is expected is refused at once (ACCELTUNE_E_READ), never opened for reading.
 *
 * The fingerprint check compares the fields a job can read without initialising anything, from
 * /proc and /sys, against those recorded when the configuration was measured:
 *   cpu_model, logical_cpus, machine, memory_gib (rounded), numa (memory_gib and cpu_count per
 *   node), nics (driver, speed_mbps, mtu of each physical NIC), gpus (PCI vendor:device of every
 *   GPU the NVIDIA driver lists, so a narrowed CUDA_VISIBLE_DEVICES does not matter).
 * A mismatch names the first field that differs. `acceltune probe --json` shows them as
 * "loader_fields"; its "id" also covers library versions and GPU details a job cannot read cheaply. */
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
  ACCELTUNE_E_READ = 2,        /* the path does not exist, cannot be read, or is a FIFO, directory or device */
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

/* This machine's fingerprint fields as the loader checks them: one line of JSON, the
 * "loader_fields" of `acceltune probe --json`. */
const char* acceltune_fingerprint(void);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char* acceltune_loader_version(void);

#ifdef __cplusplus
}
#endif

#endif
