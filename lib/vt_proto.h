/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef VT_PROTO_H
#define VT_PROTO_H
#endif
