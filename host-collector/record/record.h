/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The `record` subcommand (record.c): its options, and what every guest of
 * one recording shares (struct recording, in recording.h).
 */
#ifndef RECORD_RECORD_H
#define RECORD_RECORD_H

#include <stdio.h>

#include "recording.h"

void record_usage(FILE *f);
int record_main(int argc, char **argv);

#endif
