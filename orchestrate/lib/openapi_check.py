#!/usr/bin/python3
"""Check sigmig-agent replies against docs/openapi.yaml, the API contract.

    openapi_check.py [--spec FILE] reply METHOD PATH STATUS [--type CT]
                     [--headers FILE] [--body FILE]
    openapi_check.py [--spec FILE] records DIR
    openapi_check.py [--spec FILE] console LOG
    openapi_check.py [--spec FILE] routes

reply    one reply: exit 0 when it conforms, 1 with one line per problem,
         each naming the field ($.threads[0].pending.count: ...).
records  every reply agent/guest/lib.sh recorded in DIR (N.meta, N.headers,
         N.body), as TAP: one "ok" per reply class (method, path template,
         status), one "not ok" per reply that does not conform.
console  the same records, framed on a guest's serial console as
         SIGMIG-REPLY lines (agent/guest/lib.sh writes them when its test
         ends); prints nothing when the console holds no agent test.
routes   every operation, one line each: METHOD PATH bearer|open (bearer
         when its security, or the document's, names a scheme), for the
         tests that try every route without a token.

A reply conforms when its path and method are an operation of the spec (an
unknown path must be the spec's x-sigmig-fallback unknown-path reply, an
unknown method its unknown-method reply, a refused client certificate its
client-certificate reply, an oversized request line or headers its
uri-too-long or headers-too-large reply), its status is one the operation
lists, its Content-Type one of that response's media types, its documented
headers are present, and a JSON body validates against the response schema
($refs resolved, JSON Schema 2020-12). Run it with Debian's /usr/bin/python3
(python3-jsonschema, python3-yaml).
"""
import argparse
import base64
import binascii
import collections
import gzip
import json
import os
import re
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPEC = os.path.join(HERE, "..", "..", "docs", "openapi.yaml")
JSON_TYPES = ("application/json", "application/problem+json")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_ERRORS = 3


class SpecError(Exception):
    pass


def field_path(parts):
    out = "$"
    for p in parts:
        out += "[%d]" % p if isinstance(p, int) else "." + str(p)
    return out


class Spec:
    def __init__(self, path):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.name = os.path.relpath(path, os.path.join(HERE, "..", ".."))
        self.routes = []
        for template, item in self.doc.get("paths", {}).items():
            pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            # Literal paths win over templated ones that also match.
            self.routes.append((template.count("{"), template, re.compile(pattern), item))
        self.routes.sort(key=lambda r: r[0])
        self.fallback = self.doc.get("x-sigmig-fallback") or {}
        self.validators = {}

    def lookup(self, ref):
        if not ref.startswith("#/"):
            raise SpecError("only local $refs are supported: %s" % ref)
        node = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise SpecError("$ref %s does not resolve" % ref)
            node = node[part]
        return node

    def resolve(self, node, stack=()):
        """node with every $ref replaced by what it points to."""
        if isinstance(node, list):
            return [self.resolve(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in stack:
                raise SpecError("$ref cycle: %s" % " -> ".join(stack + (ref,)))
            target = self.resolve(self.lookup(ref), stack + (ref,))
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if not rest:
                return target
            return {"allOf": [target, self.resolve(rest, stack)]}
        return {k: self.resolve(v, stack) for k, v in node.items()}

    def route(self, path):
        for _, template, regex, item in self.routes:
            if regex.match(path):
                return template, item
        return None, None

    def validator(self, key, schema):
        if key not in self.validators:
            cls = jsonschema.Draft202012Validator
            cls.check_schema(schema)
            self.validators[key] = cls(schema, format_checker=cls.FORMAT_CHECKER)
        return self.validators[key]


def parse_headers(text):
    """The last header block of curl -D output (after 100 Continue etc.)."""
    blocks, cur = [], None
    for line in text.replace("\r", "").split("\n"):
        if line.startswith("HTTP/"):
            cur = {}
            blocks.append(cur)
        elif cur is not None and ":" in line:
            name, value = line.split(":", 1)
            cur[name.strip().lower()] = value.strip()
    return blocks[-1] if blocks else {}


def strict_json(body):
    def no_duplicates(pairs):
        obj = {}
        for k, v in pairs:
            if k in obj:
                raise ValueError("member %r appears twice" % k)
            obj[k] = v
        return obj
    return json.loads(body, object_pairs_hook=no_duplicates)


class Reply:
    def __init__(self, method, path, status, ctype=None, headers=None, body=b"",
                 length=None, label=""):
        self.method = method.upper()
        self.path = path
        self.status = str(status)
        self.headers = headers or {}
        self.ctype = ctype if ctype is not None else self.headers.get("content-type", "")
        self.body = body
        self.length = len(body) if length is None else length
        self.label = label

    def describe(self):
        return "%s %s %s" % (self.method, self.path, self.status)


# Statuses any path answers before routing (x-sigmig-fallback), by key.
OVERSIZED = {"414": "uri-too-long", "431": "headers-too-large"}


def before_routing(r):
    """The x-sigmig-fallback key of a reply given before routing, or None."""
    if r.status == "403" and b"client_certificate_required" in (r.body or b""):
        return "client-certificate"
    return OVERSIZED.get(r.status)


def check_reply(spec, r):
    """(class key, [problems]) for one reply."""
    path = r.path.split("?", 1)[0]
    template, item = spec.route(path)
    method = r.method.lower()
    fallback = before_routing(r)
    if fallback:
        key = "%s (%s) %s" % (r.method, fallback, r.status)
        return key, check_response(spec, r, fallback, spec.fallback.get(fallback),
                                   "a request refused before routing (%s)" % fallback,
                                   expect_body=method != "head")
    if item is None:
        key = "%s (unknown path) %s" % (r.method, r.status)
        return key, check_response(spec, r, "unknown-path", spec.fallback.get("unknown-path"),
                                   "an unknown path", expect_body=method != "head")
    op = item.get(method) or (item.get("get") if method == "head" else None)
    if method not in METHODS or op is None:
        key = "%s %s (method not allowed) %s" % (r.method, template, r.status)
        return key, check_response(spec, r, "unknown-method", spec.fallback.get("unknown-method"),
                                   "a method %s does not define" % template,
                                   expect_body=method != "head")
    key = "%s %s %s" % (r.method, template, r.status)
    responses = op.get("responses") or {}
    response = responses.get(r.status)
    if response is None:
        return key, ["status %s is not documented for %s %s (it lists %s)"
                     % (r.status, method.upper(), template, ", ".join(sorted(responses)))]
    return key, check_response(spec, r, "%s %s %s" % (method, template, r.status), response,
                               "%s %s" % (method.upper(), template), expect_body=method != "head")


def check_response(spec, r, key, response, what, expect_body):
    if response is None:
        return ["the spec defines no reply for %s (x-sigmig-fallback)" % what]
    response = spec.resolve(response)
    problems = check_headers(r, response.get("headers") or {})
    content = response.get("content") or {}
    base = r.ctype.split(";", 1)[0].strip().lower()
    if not content:
        if r.length:
            problems.append("%s %s documents no body, got %d bytes" % (what, r.status, r.length))
        return problems
    if not expect_body:
        return problems
    if base not in content:
        problems.append("Content-Type %r is not one of %s for %s %s"
                        % (r.ctype, ", ".join(sorted(content)), what, r.status))
        return problems
    schema = (content[base] or {}).get("schema")
    if base in JSON_TYPES:
        problems += check_json(spec, key + " " + base, schema, r)
    elif base.startswith("text/") and r.body:
        try:
            r.body.decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append("a %s body that is not UTF-8: %s" % (base, e))
    return problems


def check_headers(r, declared):
    problems = []
    for name, header in declared.items():
        value = r.headers.get(name.lower())
        if value is None:
            if header.get("required"):
                problems.append("header %s is missing" % name)
            continue
        schema = header.get("schema") or {}
        if schema.get("type") == "integer":
            if not re.match(r"^-?[0-9]+$", value):
                problems.append("header %s: %r is not an integer" % (name, value))
                continue
            value = int(value)
        for err in jsonschema.Draft202012Validator(schema).iter_errors(value):
            problems.append("header %s: %s" % (name, err.message[:200]))
    return problems


def check_json(spec, key, schema, r):
    if schema is None:
        return []
    try:
        doc = strict_json(r.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return ["the body is not JSON: %s" % e]
    validator = spec.validator(key, schema)
    # The deepest first: an object's "unevaluated property" error for a
    # member that failed its own schema says less than that member's error.
    errors = sorted(validator.iter_errors(doc),
                    key=lambda e: (-len(e.absolute_path), list(map(str, e.absolute_path))))
    out = []
    for err in errors[:MAX_ERRORS]:
        best = jsonschema.exceptions.best_match([err])
        out.append("%s: %s" % (field_path(best.absolute_path), best.message[:300]))
    if len(errors) > MAX_ERRORS:
        out.append("... and %d more" % (len(errors) - MAX_ERRORS))
    return out


# --------------------------------------------------------------- recorded replies

def parse_meta(text):
    meta = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            meta[k] = v
    return meta


def reply_from_parts(meta, headers, body, label):
    missing = [k for k in ("method", "path", "status") if k not in meta]
    if missing:
        raise ValueError("record without %s" % ", ".join(missing))
    length = int(meta["bytes"]) if meta.get("bytes", "").isdigit() else None
    return Reply(meta["method"], meta["path"], meta["status"], headers=parse_headers(headers),
                 body=body, length=length, label=label)


def records_from_dir(directory):
    """[(label, Reply or error text)] in recording order."""
    out = []
    names = sorted((n for n in os.listdir(directory) if n.endswith(".meta")),
                   key=lambda n: (len(n), n))
    for name in names:
        stem = os.path.join(directory, name[:-5])
        try:
            with open(stem + ".meta") as f:
                meta = parse_meta(f.read())
            label = "%s #%s" % (meta.get("test", "?"), name[:-5])
            headers = read_text(stem + ".headers")
            body = read_bytes(stem + ".body")
            out.append((label, reply_from_parts(meta, headers, body, label)))
        except (OSError, ValueError) as e:
            out.append((name, "unreadable record: %s" % e))
    return out


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


FRAME = re.compile(r"SIGMIG-REPLY (\S+) (meta|headers|body|end) ?(\S*)\s*$")
TRAILER = re.compile(r"SIGMIG-REPLIES (\S+) ([0-9]+)\s*$")
TEST_START = re.compile(r"^# SIGMIG-TEST (agent/\S+)\s*$")


def records_from_console(path):
    """(tests run, {test: declared count}, [(label, Reply or error)])."""
    parts = collections.OrderedDict()
    ends, declared, tests = {}, {}, []
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    for line in text.replace("\r", "").split("\n"):
        m = TEST_START.match(line)
        if m:
            tests.append(m.group(1).split("/", 1)[1])
            continue
        m = TRAILER.search(line)
        if m:
            declared[m.group(1)] = int(m.group(2))
            continue
        m = FRAME.search(line)
        if not m:
            continue
        rid, part, data = m.groups()
        if part == "end":
            ends[rid] = data
        else:
            parts.setdefault(rid, {}).setdefault(part, []).append(data)
    out = []
    for rid, p in parts.items():
        try:
            meta = parse_meta(b64(p.get("meta")).decode("utf-8"))
            label = "%s #%s" % tuple(rid.split("/", 1)) if "/" in rid else rid
            headers = b64(p.get("headers")).decode("utf-8", errors="replace")
            body = gzip.decompress(b64(p.get("body"))) if p.get("body") else b""
            if rid not in ends:
                raise ValueError("no end line (the console lost part of it)")
            if ends[rid] != str(len(body)):
                raise ValueError("body of %d bytes, the end line says %s" % (len(body), ends[rid]))
            out.append((label, reply_from_parts(meta, headers, body, label)))
        except (ValueError, binascii.Error, OSError, EOFError) as e:
            out.append((rid, "unreadable record: %s" % e))
    return tests, declared, out


def b64(chunks):
    return base64.b64decode("".join(chunks or []), validate=True)


# --------------------------------------------------------------------- TAP

def tap_records(spec, records, counts_by_test=None):
    """TAP lines on stdout; returns the number of failures."""
    classes = collections.OrderedDict()
    failures = 0
    for label, rec in records:
        if isinstance(rec, str):
            print("not ok - openapi: %s: %s" % (label, rec))
            failures += 1
            continue
        key, problems = check_reply(spec, rec)
        entry = classes.setdefault(key, {"n": 0, "tests": set(), "bad": 0})
        entry["n"] += 1
        entry["tests"].add(label.split(" #", 1)[0])
        if problems:
            entry["bad"] += 1
            failures += 1
            print("not ok - openapi: %s (%s) does not conform to %s: %s"
                  % (rec.describe(), label, spec.name, "; ".join(problems)))
    for key, entry in classes.items():
        if entry["bad"] == 0:
            print("ok - openapi: %s: %d repl%s (%s) conform to %s"
                  % (key, entry["n"], "y" if entry["n"] == 1 else "ies",
                     ", ".join(sorted(entry["tests"])), spec.name))
    for test, (want, got) in (counts_by_test or {}).items():
        if want is None:
            print("not ok - openapi: %s recorded no replies on the console (killed, or lib.sh not used?)" % test)
            failures += 1
        elif want != got:
            print("not ok - openapi: %s declared %d replies, %d arrived whole" % (test, want, got))
            failures += 1
    if not records and not counts_by_test:
        print("not ok - openapi: no replies were recorded")
        failures += 1
    return failures


def cmd_reply(spec, a):
    headers = parse_headers(read_text(a.headers)) if a.headers else {}
    body = sys.stdin.buffer.read() if a.body == "-" else (read_bytes(a.body) if a.body else b"")
    ctype = a.type or headers.get("content-type") or ("application/json" if body else "")
    r = Reply(a.method, a.path, a.status, ctype=ctype, headers=headers, body=body)
    _, problems = check_reply(spec, r)
    for p in problems:
        print("%s: %s" % (r.describe(), p))
    return 1 if problems else 0


def cmd_records(spec, a):
    return 1 if tap_records(spec, records_from_dir(a.dir)) else 0


def cmd_console(spec, a):
    tests, declared, records = records_from_console(a.log)
    if not tests and not records and not declared:
        return 0
    arrived = collections.Counter(label.split(" #", 1)[0] for label, rec in records
                                  if not isinstance(rec, str))
    counts = collections.OrderedDict()
    for test in tests + [t for t in declared if t not in tests]:
        counts[test] = (declared.get(test), arrived.get(test, 0))
    return 1 if tap_records(spec, records, counts) else 0


def cmd_routes(spec, a):
    doc = spec.doc
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            security = op.get("security", doc.get("security", []))
            print("%s %s %s" % (method.upper(), path, "bearer" if security else "open"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=DEFAULT_SPEC)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("reply")
    p.add_argument("method")
    p.add_argument("path")
    p.add_argument("status")
    p.add_argument("--type", help="Content-Type (default: from --headers, else JSON)")
    p.add_argument("--headers", help="curl -D output")
    p.add_argument("--body", help="the body (- for stdin)")
    p = sub.add_parser("records")
    p.add_argument("dir")
    p = sub.add_parser("console")
    p.add_argument("log")
    sub.add_parser("routes")
    a = ap.parse_args()
    try:
        spec = Spec(a.spec)
        return {"reply": cmd_reply, "records": cmd_records, "console": cmd_console,
                "routes": cmd_routes}[a.cmd](spec, a)
    except (OSError, SpecError, yaml.YAMLError, jsonschema.exceptions.SchemaError) as e:
        print("not ok - openapi: cannot check against %s: %s" % (a.spec, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
