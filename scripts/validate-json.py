#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check JSON documents against one of doc/'s schemas.

Usage: validate-json.py SCHEMA FILE...   (FILE - reads standard input)

Prints "ok: FILE" per valid document, and for an invalid one every
violation with its path in the document. Exit status: 0 all valid, 1 one is
not (or is not JSON), 2 usage error or an unusable schema, 77 when python3's
jsonschema module (Debian: python3-jsonschema) is missing, automake's skip.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate-json: python3's jsonschema module is missing "
          "(apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(77)


def where(err):
    """The violation's place as a jq-like path: .guests[0].sync."""
    path = ""
    for p in err.absolute_path:
        path += "[%d]" % p if isinstance(p, int) else "." + p
    return path or "."


def load(name):
    if name == "-":
        return json.load(sys.stdin)
    with open(name, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        schema = load(argv[1])
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print("validate-json: %s: not a usable schema: %s" % (argv[1], e), file=sys.stderr)
        return 2
    validator = cls(schema)
    status = 0
    for name in argv[2:]:
        label = "standard input" if name == "-" else name
        try:
            doc = load(name)
        except (OSError, ValueError) as e:
            print("FAIL: %s: not JSON: %s" % (label, e))
            status = 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if not errors:
            print("ok: %s" % label)
            continue
        status = 1
        print("FAIL: %s does not match %s:" % (label, argv[1]))
        for e in errors[:20]:
            # Of a oneOf's branches, the one that came closest says what is wrong.
            if e.context:
                e = jsonschema.exceptions.best_match(e.context)
            msg = e.message if len(e.message) <= 240 else e.message[:200] + " ..."
            print("  %s: %s" % (where(e), msg))
        if len(errors) > 20:
            print("  ... %d more" % (len(errors) - 20))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
