/* The status API compiles and works as plain C, as engines written in C use
 * it. Called from status_test.cpp. */

#include "m2n/status.h"

#include <string.h>

int m2n_status_c_roundtrip(void) {
  m2n_status_t status = m2n_status_create(M2N_STATUS_NOT_FOUND, "no rank 7");
  int ok = m2n_status_code(status) == M2N_STATUS_NOT_FOUND &&
           strcmp(m2n_status_message(status), "no rank 7") == 0;
  m2n_status_free(status);
  return ok;
}
