/* A job that loads a tuned configuration through libacceltune first thing in main, as
 * acceltune/loader.h shows, then says what it sees: the return code, the variables named on its
 * command line, every shared object mapped into it, and its thread count. Linked with the loader
 * only; tests/test_loader.cpp runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acceltune/loader.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: loader_job PATH [VARIABLE...]\n");
    return 2;
  }
  const int rc = acceltune_apply(argv[1], 0);
  printf("rc=%d\n", rc);
  if (rc != ACCELTUNE_OK) printf("error=%s\n", acceltune_last_error());
  for (int i = 2; i < argc; ++i) {
    const char* v = getenv(argv[i]);
    printf("%s=%s\n", argv[i], v ? v : "(unset)");
  }
  char line[4096];
  FILE* maps = fopen("/proc/self/maps", "r");
  while (maps && fgets(line, sizeof line, maps)) {
    const char* path = strchr(line, '/');
    if (path && strstr(path, ".so")) {
      line[strcspn(line, "\n")] = '\0';
      printf("mapped=%s\n", path);
    }
  }
  if (maps) fclose(maps);
  FILE* status = fopen("/proc/self/status", "r");
  while (status && fgets(line, sizeof line, status)) {
    if (strncmp(line, "Threads:", 8) == 0) printf("threads=%d\n", atoi(line + 8));
  }
  if (status) fclose(status);
  return 0;
}
