"""The acquisition room's JSON against docs/acquisitions.openapi.yaml, with
a validator we did not write (jsonschema, JSON Schema 2020-12, the dialect
of OpenAPI 3.1): every canonical arm request acq_bodies prints validates as
ResolvedRequest and as ArmRequest, and so does the body it came from; every
error body validates as ErrorBody, with the status section 12 gives its
code; every arm the parser refuses for a rule the schema holds, the schema
refuses too; the Directory schema and checks 2 and 7 agree on every
directory acq_bodies tries.  Python's json module is the second judge: the canonical form
reads back and is written again byte for byte by json.dumps (so its
doubles are Python's repr).

Run with the venv's python (B2S_VENV, else <source>/.venv: scripts/make-venv);
exits 77 (skip) without it."""
import json
import os
import re
import subprocess
import sys

SRC = os.environ["B2S_SRC"]
DRIVER = os.environ["B2S_ACQ_BODIES"]


def in_venv():
    v = os.environ.get("B2S_VENV") or os.path.join(SRC, ".venv")
    vpy = os.path.join(v, "bin", "python")
    if not os.path.exists(vpy):
        print("no venv (B2S_VENV): skipped")
        return 77
    if os.path.realpath(sys.executable) != os.path.realpath(vpy):
        return subprocess.call([vpy] + sys.argv)
    return None


def doc_statuses():
    md = open(os.path.join(SRC, "docs", "ACQUISITIONS.md"), encoding="utf-8").read()
    sec = md[md.index("## 12. Error codes"):]
    sec = sec[:sec.index("\n## ", 1)]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\| `([a-z_]+)` \| (\d{3}) \|", sec, re.M)}


def main():
    rc = in_venv()
    if rc is not None:
        return rc
    import yaml
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    api = yaml.safe_load(open(os.path.join(SRC, "docs", "acquisitions.openapi.yaml"),
                              encoding="utf-8"))
    registry = Registry().with_resource(
        "urn:acq", Resource.from_contents(api, default_specification=DRAFT202012))

    def validator(name):
        return Draft202012Validator({"$ref": f"urn:acq#/components/schemas/{name}"},
                                    registry=registry,
                                    format_checker=Draft202012Validator.FORMAT_CHECKER)

    arm, resolved, errbody = validator("ArmRequest"), validator("ResolvedRequest"), \
        validator("ErrorBody")
    dirv = validator("Directory")
    status = doc_statuses()
    out = subprocess.run([DRIVER], check=True, capture_output=True, text=True).stdout
    fails, counts = [], {}

    def errors(v, inst):
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in v.iter_errors(inst)]

    def check_error_body(text, where):
        body = json.loads(text)
        fails.extend(f"{where}: ErrorBody: {m}" for m in errors(errbody, body))
        code = body["error"]["code"]
        if body["error"]["status"] != status.get(code):
            fails.append(f"{where}: {code} has status {body['error']['status']}, "
                         f"section 12 gives {status.get(code)}")
        return body

    for line in out.splitlines():
        kind, a, b = line.split("\t")
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "arm":
            canon = json.loads(b)
            fails.extend(f"{a}: canonical as ResolvedRequest: {m}"
                         for m in errors(resolved, canon))
            fails.extend(f"{a}: canonical as ArmRequest: {m}" for m in errors(arm, canon))
            fails.extend(f"{a}: body as ArmRequest: {m}" for m in errors(arm, json.loads(a)))
            again = json.dumps(canon, separators=(",", ":"), ensure_ascii=False)
            if again != b:
                fails.append(f"canonical form differs from Python's json:\n  {b}\n  {again}")
        elif kind == "refused":
            check_error_body(b, a)
            if not errors(arm, json.loads(a)):
                fails.append(f"{a}: refused ({json.loads(b)['error']['code']}), "
                             "but the schema takes it")
        elif kind == "checked":
            check_error_body(b, a)
        elif kind == "dir":
            written = json.loads(f'"{a}"')
            ours = b == "ok"
            if not ours:
                check_error_body(b, a)
            theirs = not errors(dirv, written)
            if ours != theirs:
                fails.append(f"directory {written!r}: acq {'takes' if ours else 'refuses'} "
                             f"it, the schema {'takes' if theirs else 'refuses'} it")
        elif kind == "error":
            body = check_error_body(b, a)
            if body["error"]["code"] != a:
                fails.append(f"{a}: the body says {body['error']['code']}")
        else:
            fails.append(f"unknown line {line!r}")
    if counts.get("error", 0) != 2 * len(status):
        fails.append(f"{counts.get('error', 0)} error bodies for {len(status)} codes")
    print(f"validated: {counts}")
    for f in fails:
        print("FAIL", f)
    return 1 if fails or not counts.get("arm") else 0


if __name__ == "__main__":
    sys.exit(main())
