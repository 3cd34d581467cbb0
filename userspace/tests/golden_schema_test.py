#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every golden -j output (tests/golden/*.json, one document per line)
validates against Documentation/flowbulk-json.schema.json, and documents
that break the format (old schema version, a member missing) do not."""
import json
import pathlib
import sys

import jsonschema


def main() -> int:
    schema_path, golden_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    schema = json.loads(schema_path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    documents = []
    for path in sorted(golden_dir.glob("*.json")):
        lines = [line for line in path.read_text().splitlines() if line]
        if not lines:
            print(f"{path.name}: empty")
            failures += 1
        for number, line in enumerate(lines, 1):
            document = json.loads(line)
            documents.append((path.name, document))
            for error in validator.iter_errors(document):
                print(f"{path.name}:{number}: {error.message} at {list(error.absolute_path)}")
                failures += 1
    if not documents:
        print(f"no golden JSON in {golden_dir}")
        return 1
    # The schema must be able to fail: each document with schema 1, and
    # each with its first member after "schema" removed.
    for name, document in documents:
        broken = [dict(document, schema=1)]
        members = [key for key in document if key != "schema"]
        if members:
            broken.append({k: v for k, v in document.items() if k != members[0]})
        for bad in broken:
            if validator.is_valid(bad):
                print(f"{name}: the schema accepts a broken document: {json.dumps(bad)[:120]}")
                failures += 1
    print(f"{len(documents)} documents, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
