/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef VT_TRACEDAT_H
#define VT_TRACEDAT_H
#endif
