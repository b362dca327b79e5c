#!/usr/bin/python3
"""Run the `$ curl` transcripts of a Markdown document and compare outputs.

A transcript is a line of a fenced block starting with "$ " (continued while
it ends with a backslash, "|" or "&&"), followed by the output the document shows, up to
the next "$ " line or the end of the block.

  doc_examples.py script DOC OUTDIR   print a bash script that runs every
                                      command in document order, in one shell,
                                      leaving OUTDIR/LINE.{out,err,rc}
  doc_examples.py check DOC OUTDIR    compare each documented output with the
                                      actual one; one line per example, exit
                                      1 if any differs
  doc_examples.py list DOC            print LINE: COMMAND for every example;
                                      exit 1 if a documented output that
                                      looks like JSON does not parse

Matching, "in shape": JSON output (a trailing "..." member or "[ ... ]" is
allowed) must have every key path of the document with the same JSON type;
the values of a few keys (code, status, state, result, type, title) must be
equal; for an array, each documented element must match one actual element.
An "HTTP/x NNN" status line must have the same status, and each documented
header must be present. Text lines must appear, with every number of the
document standing for any number. A command whose documented output is not a
problem (an HTTP 4xx/5xx, a `code` member, or a bare problem code) runs with
curl --fail-with-body, so a refused request fails the example.
"""
import json
import os
import re
import sys

EXACT_KEYS = {"code", "status", "state", "result", "type", "title"}


class Example:
    def __init__(self, line, command, output):
        self.line = line
        self.command = command
        self.output = output


def examples(path):
    """Every "$ " command of the fenced blocks of the document at path."""
    found = []
    fence = False
    current = None
    continued = False
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            text = text.rstrip("\n")
            if text.lstrip().startswith("```"):
                fence = not fence
                current = None
                continue
            if not fence:
                continue
            if continued:
                current.command += "\n" + text
                continued = text.rstrip().endswith(("\\", "|", "&&"))
            elif text.startswith("$ "):
                current = Example(number, text[2:], [])
                found.append(current)
                continued = text.rstrip().endswith(("\\", "|", "&&"))
            elif current is not None:
                current.output.append(text)
    for e in found:
        while e.output and not e.output[-1].strip():
            e.output.pop()
    return found


def problem_codes(path):
    """The problem codes the document's Errors table lists."""
    codes = set()
    with open(path, encoding="utf-8") as f:
        for text in f:
            if re.match(r"^\| [45]\d\d \|", text):
                codes.update(re.findall(r"`([a-z][a-z0-9_]*)`", text.split("|")[2]))
    return codes


def expects_problem(example, codes):
    out = "\n".join(example.output).strip()
    if re.match(r"^HTTP/\S+ [45]\d\d", out):
        return True
    if out in codes:
        return True
    return re.search(r'"code"\s*:\s*"([a-z_]+)"', out) is not None and \
        re.search(r'"code"\s*:\s*"([a-z_]+)"', out).group(1) in codes


def parse_doc_json(text):
    """The documented JSON, with its "..." elisions removed; None if not JSON."""
    t = re.sub(r"\[\s*\.\.\.\s*\]", "[]", text)
    t = re.sub(r",\s*\.\.\.(?=\s*[,}\]])", "", t)
    t = re.sub(r"\.\.\.\s*,", "", t)
    try:
        return json.loads(t)
    except ValueError:
        return None


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def compare_json(doc, actual, path="$"):
    """The differences between the documented value and the actual one."""
    if json_type(doc) != json_type(actual):
        return ["%s: documented %s, got %s" % (path, json_type(doc), json_type(actual))]
    errors = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            sub = "%s.%s" % (path, k)
            if k not in actual:
                errors.append("%s: documented, missing from the reply" % sub)
                continue
            errors += compare_json(v, actual[k], sub)
            if k in EXACT_KEYS and isinstance(v, str) and v != actual[k]:
                errors.append("%s: documented %r, got %r" % (sub, v, actual[k]))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            sub = "%s[%d]" % (path, i)
            if not actual:
                errors.append("%s: documented, the reply's array is empty" % sub)
                break
            tries = [compare_json(v, a, sub) for a in actual]
            if all(tries):
                errors.append("%s: no element of the reply matches (%s)"
                              % (sub, min(tries, key=len)[0]))
    return errors


def line_pattern(text):
    """A regex of a documented text line: any number stands for any number."""
    parts = re.split(r"(\d+(?:\.\d+)?)", text.strip())
    return "".join(r"\d+(?:\.\d+)?" if i % 2 else re.escape(p) for i, p in enumerate(parts))


def compare_text(doc_lines, actual):
    lines = [l.rstrip("\r") for l in actual.splitlines()]
    errors = []
    for d in doc_lines:
        if not d.strip():
            continue
        pat = re.compile(line_pattern(d) + r"\s*$")
        if not any(pat.match(l.strip()) for l in lines):
            errors.append("line %r not in the output" % d.strip())
    return errors


def compare_http(doc_lines, actual):
    """An `curl -i` transcript: status line, headers, blank line, body."""
    text = actual.replace("\r\n", "\n")
    head, _, body = text.partition("\n\n")
    got = head.split("\n")
    errors = []
    want_status = doc_lines[0].split()[1]
    got_status = got[0].split()[1] if len(got[0].split()) > 1 else "?"
    if want_status != got_status:
        errors.append("status: documented %s, got %s" % (want_status, got_status))
    i = 1
    headers = {h.split(":", 1)[0].strip().lower(): h.split(":", 1)[1].strip()
               for h in got[1:] if ":" in h}
    while i < len(doc_lines) and doc_lines[i].strip():
        name, _, value = doc_lines[i].partition(":")
        have = headers.get(name.strip().lower())
        if have is None:
            errors.append("header %s: documented, missing" % name.strip())
        elif not re.match(line_pattern(value) + r"\s*$", have):
            errors.append("header %s: documented %r, got %r" % (name.strip(), value.strip(), have))
        i += 1
    doc_body = "\n".join(doc_lines[i:]).strip()
    if doc_body:
        errors += compare_output(doc_body.split("\n"), body)
    return errors


def compare_output(doc_lines, actual):
    doc_text = "\n".join(doc_lines).strip()
    if not doc_text:
        return []
    if doc_text.startswith("HTTP/"):
        return compare_http(doc_lines, actual)
    doc = parse_doc_json(doc_text) if doc_text[0] in "{[" else None
    if doc is not None:
        try:
            got = json.loads(actual)
        except ValueError:
            return ["documented JSON, got %r" % actual.strip()[:200]]
        return compare_json(doc, got)
    return compare_text(doc_lines, actual)


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def script(doc, outdir):
    codes = problem_codes(doc)
    print("# Generated from %s by orchestrate/lib/doc_examples.py" % doc)
    print("set -uo pipefail")
    print('curl() { if [ "$DOC_FAIL" = 1 ]; then command curl --fail-with-body "$@"; '
          'else command curl "$@"; fi; }')
    for e in examples(doc):
        base = os.path.join(outdir, str(e.line))
        print("\n# %s:%d" % (doc, e.line))
        print("DOC_FAIL=%d" % (0 if expects_problem(e, codes) else 1))
        print("{\n%s\n} >%s 2>%s" % (e.command, shell_quote(base + ".out"), shell_quote(base + ".err")))
        print("echo $? >%s" % shell_quote(base + ".rc"))


def check(doc, outdir):
    name = os.path.basename(doc)
    failed = 0
    for e in examples(doc):
        first = e.command.split("\n")[0]
        base = os.path.join(outdir, str(e.line))
        try:
            with open(base + ".rc") as f:
                rc = f.read().strip()
            with open(base + ".out", encoding="utf-8", errors="replace") as f:
                out = f.read()
        except OSError:
            print("FAIL %s:%d: never ran: %s" % (name, e.line, first))
            failed += 1
            continue
        errors = [] if rc == "0" else ["exit status %s" % rc]
        errors += compare_output(e.output, out)
        if errors:
            failed += 1
            print("FAIL %s:%d: %s" % (name, e.line, first))
            for err in errors:
                print("    %s" % err)
            try:
                with open(base + ".err", encoding="utf-8", errors="replace") as f:
                    err_text = f.read().strip()
            except OSError:
                err_text = ""
            for l in (out.strip().splitlines()[:8] + err_text.splitlines()[-3:]):
                print("    | %s" % l[:200])
        else:
            print("ok   %s:%d: %s" % (name, e.line, first))
    return 1 if failed else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "list":
        bad = 0
        for e in examples(argv[2]):
            print("%d: %s" % (e.line, e.command.split("\n")[0]))
            text = "\n".join(e.output).strip()
            if text[:1] in ("{", "[") and parse_doc_json(text) is None:
                print("    documented output is not JSON (once '...' is removed)")
                bad += 1
        return 1 if bad else 0
    if len(argv) == 4 and argv[1] == "script":
        script(argv[2], argv[3])
        return 0
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
