/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: nccl-net-diag explain reads untrusted text (logs pasted from
 * anywhere). The input is one log file: every line goes through the line
 * parser, the whole set through the correlation and every rule, and the
 * findings through both reports. Nothing may crash, read out of bounds or
 * leak, and the JSON report must stay free of raw control bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/correlate.h"
#include "tools/explain/explain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct logset ls = {0};
  if (logset_read_buffer(&ls, "fuzz.log", (const char *)data, size)) abort();
  logset_finish(&ls);
  struct corr c;
  struct findings fs;
  if (explain_analyse(&ls, &c, &fs)) abort();
  char *json = NULL, *text = NULL;
  size_t jlen = 0, tlen = 0;
  FILE *jf = open_memstream(&json, &jlen), *tf = open_memstream(&text, &tlen);
  if (!jf || !tf) abort();
  report_json(jf, &ls, &c, &fs);
  report_text(tf, &ls, &c, &fs, true);
  fclose(jf), fclose(tf);
  for (size_t i = 0; i < jlen; i++)
    if ((unsigned char)json[i] < 0x20 && json[i] != '\n') abort();
  for (size_t i = 0; i < tlen; i++)
    if ((unsigned char)text[i] < 0x20 && text[i] != '\n') abort();
  free(json), free(text);
  findings_free(&fs);
  corr_free(&c);
  logset_free(&ls);
  return 0;
}
