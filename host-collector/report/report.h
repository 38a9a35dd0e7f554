/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The `report` subcommand (report.c). */
#ifndef REPORT_REPORT_H
#define REPORT_REPORT_H

int report_main(int argc, char **argv);

#endif
