#!/usr/bin/env python3
"""tests/integration/oas_check.py -- validate recorded HTTP responses against
openapi.yaml, with the Python standard library only.

Why our own checker: CI has python3 but neither a YAML module nor network
access to install one, so this file carries (1) a parser for the YAML subset
openapi.yaml is written in -- block mappings and sequences, flow sequences of
scalars, `{}`, quoted and plain scalars, `|`/`>` block scalars, comments --
which fails loudly on anything else, so the contract cannot silently drift
outside what is checked; and (2) a validator for the JSON Schema keywords the
contract uses: $ref, type (incl. type lists), required, properties,
additionalProperties (false or a schema), minProperties, items, minItems,
maxItems, uniqueItems, enum, const, minimum, maximum, exclusiveMinimum,
minLength, maxLength, pattern, oneOf, anyOf, allOf. Unknown keywords are
errors too. Integers are told from reals as strictly typed clients tell them:
`1024.0` is not an integer (json.loads keeps it a float).
tools/lint/schema_check.cjs checks the same responses with ajv.

For each response it checks: the path matches a documented route and method,
the status code is documented for it, the media type is one of the
documented ones, a JSON body parses and validates against the schema, 202
carries Location and Retry-After, 304 has no body, problem responses carry
errors with pointers.

usage: oas_check.py openapi.yaml responses.tsv
  each line: METHOD<TAB>PATH<TAB>CODE<TAB>CONTENT-TYPE<TAB>HEADERS-FILE<TAB>BODY-FILE
prints one line per failure and a final "N passed, N failed".
"""
import json
import re
import sys

# ---- a YAML subset parser ---------------------------------------------------


class YamlError(Exception):
    pass


def _strip_comment(s):
    out, q = [], None
    for i, c in enumerate(s):
        if q:
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        out.append(c)
    return "".join(out).rstrip()


def _scalar(tok, lineno):
    tok = tok.strip()
    if tok == "":
        return None
    if tok[0] == "'":
        if not tok.endswith("'") or len(tok) < 2:
            raise YamlError("line %d: unterminated quote" % lineno)
        return tok[1:-1].replace("''", "'")
    if tok[0] == '"':
        return json.loads(tok)
    if tok == "{}":
        return {}
    if tok[0] == "[":
        if not tok.endswith("]"):
            raise YamlError("line %d: multi-line flow sequence" % lineno)
        inner = tok[1:-1].strip()
        return [] if not inner else [_scalar(x, lineno) for x in _split_flow(inner)]
    if tok[0] in "{&*!%@`|>":
        raise YamlError("line %d: unsupported YAML: %s" % (lineno, tok))
    if tok in ("true", "false"):
        return tok == "true"
    if tok in ("null", "~"):
        return None
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if re.fullmatch(r"-?\d+\.\d*([eE][-+]?\d+)?", tok):
        return float(tok)
    return tok


def _split_flow(s):
    parts, cur, q = [], [], None
    for c in s:
        if q:
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == ",":
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return parts


def _split_key(s, lineno):
    """'key: rest' -> (key, rest) or None when s is not a mapping entry."""
    if s[0] in "'\"":
        q = s[0]
        end = s.index(q, 1)
        key, rest = s[1:end], s[end + 1:]
        if not rest.startswith(":"):
            raise YamlError("line %d: bad quoted key" % lineno)
        return key, rest[1:]
    m = re.match(r"([^:\s][^:]*?):(\s|$)", s)
    if not m:
        return None
    return m.group(1), s[m.end(1) + 1:]


def parse_yaml(text):
    lines = []
    raw = text.split("\n")
    for n, line in enumerate(raw, 1):
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise YamlError("line %d: tab indentation" % n)
        lines.append((n, line))
    pos = [0]

    def next_content(i):
        while i < len(lines):
            s = _strip_comment(lines[i][1])
            if s.strip():
                return i
            i += 1
        return i

    def indent_of(i):
        line = lines[i][1]
        return len(line) - len(line.lstrip(" "))

    def block_scalar(style, parent_indent):
        buf = []
        i = pos[0]
        ind = None
        while i < len(lines):
            line = lines[i][1]
            if line.strip() == "":
                buf.append("")
                i += 1
                continue
            cur = len(line) - len(line.lstrip(" "))
            if cur <= parent_indent:
                break
            if ind is None:
                ind = cur
            buf.append(line[ind:])
            i += 1
        pos[0] = i
        while buf and buf[-1] == "":
            buf.pop()
        return ("\n".join(buf) + "\n") if style == "|" else " ".join(buf) + "\n"

    def value_after(rest, indent, lineno):
        rest = _strip_comment(rest).strip()
        if rest in ("|", ">", "|-", ">-"):
            return block_scalar(rest[0], indent)
        if rest == "":
            j = next_content(pos[0])
            if j < len(lines) and (indent_of(j) > indent or
                                   (indent_of(j) == indent and lines[j][1].lstrip().startswith("- "))):
                pos[0] = j
                return node(indent_of(j))
            return None
        return _scalar(rest, lineno)

    def node(indent):
        i = next_content(pos[0])
        pos[0] = i
        first = lines[i][1].strip()
        if first.startswith("- ") or first == "-":
            return seq(indent)
        return mapping(indent)

    def seq(indent):
        out = []
        while True:
            i = next_content(pos[0])
            if i >= len(lines) or indent_of(i) != indent:
                break
            n, line = lines[i]
            s = _strip_comment(line).strip()
            if not (s.startswith("- ") or s == "-"):
                break
            item = s[2:] if s != "-" else ""
            pos[0] = i + 1
            kv = _split_key(item, n) if item else None
            if kv:
                # "- key: v" starts a mapping indented at indent + 2
                lines[i] = (n, " " * (indent + 2) + item)
                pos[0] = i
                out.append(mapping(indent + 2))
            else:
                out.append(value_after(item, indent, n))
        return out

    def mapping(indent):
        out = {}
        while True:
            i = next_content(pos[0])
            if i >= len(lines):
                break
            cur = indent_of(i)
            if cur < indent:
                break
            if cur > indent:
                raise YamlError("line %d: unexpected indentation" % lines[i][0])
            n, line = lines[i]
            s = _strip_comment(line).strip()
            if s.startswith("- "):
                break
            kv = _split_key(s, n)
            if not kv:
                raise YamlError("line %d: expected 'key: value'" % n)
            key, rest = kv
            if key in out:
                raise YamlError("line %d: duplicate key %s" % (n, key))
            pos[0] = i + 1
            out[key] = value_after(rest, indent, n)
        return out

    doc = node(0)
    if next_content(pos[0]) < len(lines):
        raise YamlError("line %d: trailing content" % lines[next_content(pos[0])][0])
    return doc


# ---- JSON Schema subset -------------------------------------------------------

KNOWN = {"type", "required", "properties", "items", "enum", "minimum", "maximum", "pattern",
         "$ref", "description", "format", "default", "additionalProperties", "example", "oneOf",
         "anyOf", "allOf", "const", "minItems", "maxItems", "uniqueItems", "minLength",
         "maxLength", "exclusiveMinimum", "minProperties", "readOnly", "title"}


def resolve(doc, ref):
    if not ref.startswith("#/"):
        raise ValueError("external $ref " + ref)
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _type_ok(t, v):
    if t == "null":
        return v is None
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    raise ValueError("unknown type " + t)


def matching(doc, branches, v, where):
    """How many of the schemas in branches (oneOf's, anyOf's) v validates against."""
    fits = 0
    for branch in branches:
        e = []
        validate(doc, branch, v, where, e)
        fits += not e
    return fits


def validate(doc, schema, v, where, errs):
    if "$ref" in schema:
        schema = resolve(doc, schema["$ref"])
    unknown = set(schema) - KNOWN
    if unknown:
        errs.append("%s: schema uses unsupported keywords %s" % (where, sorted(unknown)))
    if "oneOf" in schema:
        # exactly one branch must hold
        fits = matching(doc, schema["oneOf"], v, where)
        if fits != 1:
            errs.append("%s: matches %d of the oneOf branches, not exactly one" % (where, fits))
    if "anyOf" in schema and not matching(doc, schema["anyOf"], v, where):
        errs.append("%s: matches none of the anyOf branches" % where)
    for branch in schema.get("allOf", []):
        validate(doc, branch, v, where, errs)
    t = schema.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(_type_ok(x, v) for x in ts):
            errs.append("%s: expected %s, got %s" % (where, t, type(v).__name__))
            return
    if "enum" in schema and v not in schema["enum"]:
        errs.append("%s: %r not in %r" % (where, v, schema["enum"]))
    if "const" in schema and not (type(v) is type(schema["const"]) and v == schema["const"]):
        errs.append("%s: %r is not %r" % (where, v, schema["const"]))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append("%s: %r < minimum %r" % (where, v, schema["minimum"]))
        if "exclusiveMinimum" in schema and v <= schema["exclusiveMinimum"]:
            errs.append("%s: %r <= exclusiveMinimum %r" % (where, v, schema["exclusiveMinimum"]))
        if "maximum" in schema and v > schema["maximum"]:
            errs.append("%s: %r > maximum %r" % (where, v, schema["maximum"]))
    if isinstance(v, str):
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errs.append("%s: %r does not match %s" % (where, v, schema["pattern"]))
        if "minLength" in schema and len(v) < schema["minLength"]:
            errs.append("%s: shorter than %d" % (where, schema["minLength"]))
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            errs.append("%s: longer than %d" % (where, schema["maxLength"]))
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errs.append("%s: missing required %s" % (where, k))
        if len(v) < schema.get("minProperties", 0):
            errs.append("%s: fewer than %d members" % (where, schema["minProperties"]))
        for k, sub in schema.get("properties", {}).items():
            if k in v:
                validate(doc, sub, v[k], where + "/" + k, errs)
        extra = set(v) - set(schema.get("properties", {}))
        more = schema.get("additionalProperties")
        if more is False and extra:
            errs.append("%s: unexpected %s" % (where, sorted(extra)))
        elif isinstance(more, dict):
            for k in sorted(extra):
                validate(doc, more, v[k], where + "/" + k, errs)
    if isinstance(v, list):
        if len(v) < schema.get("minItems", 0):
            errs.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errs.append("%s: more than %d items" % (where, schema["maxItems"]))
        if schema.get("uniqueItems") and len({json.dumps(x, sort_keys=True) for x in v}) != len(v):
            errs.append("%s: items not unique" % where)
        if "items" in schema:
            for i, x in enumerate(v):
                validate(doc, schema["items"], x, "%s/%d" % (where, i), errs)


# ---- responses against operations -----------------------------------------


def match_path(doc, path):
    path = path.split("?", 1)[0]
    for tmpl, item in doc["paths"].items():
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(tmpl)) + "$"
        if re.match(rx, path):
            return tmpl, item
    return None, None


def headers_of(path):
    h = {}
    try:
        with open(path, encoding="latin-1") as f:
            for line in f:
                if ":" in line and not line.startswith("HTTP/"):
                    k, v = line.split(":", 1)
                    h[k.strip().lower()] = v.strip()
    except OSError:
        pass
    return h


def check_one(doc, method, path, code, ctype, hfile, bfile):
    errs = []
    with open(bfile, "rb") as f:
        body = f.read()
    headers = headers_of(hfile)
    tmpl, item = match_path(doc, path)
    media = ctype.split(";")[0].strip().lower()
    if tmpl is None:
        # Unknown routes are answered 404 with a problem.
        if code != "404":
            return ["%s %s: undocumented path answered %s" % (method, path, code)]
        resp = resolve(doc, "#/components/responses/NotFound")
    else:
        op = item.get(method.lower())
        if op is None:
            if code != "405":
                return ["%s %s: undocumented method answered %s" % (method, path, code)]
            resp = resolve(doc, "#/components/responses/MethodNotAllowed")
            if "allow" not in headers:
                errs.append("%s %s: 405 without Allow" % (method, path))
        else:
            resp = op["responses"].get(code) or op["responses"].get("default")
            if resp is None:
                return ["%s %s: status %s not documented for %s" % (method, path, code, tmpl)]
            if "$ref" in resp:
                resp = resolve(doc, resp["$ref"])
    if code == "304":
        if body:
            errs.append("%s %s: 304 with a body" % (method, path))
        return errs
    if code == "202":
        for h in ("location", "retry-after"):
            if h not in headers:
                errs.append("%s %s: 202 without %s" % (method, path, h))
    content = resp.get("content")
    if not content:
        if body:
            errs.append("%s %s: %s has a body but none is documented" % (method, path, code))
        return errs
    if media not in content:
        return errs + ["%s %s: %s media type %r not in %s" % (method, path, code, media,
                                                              sorted(content))]
    schema = content[media].get("schema", {})
    if media.endswith("json"):
        try:
            v = json.loads(body)
        except ValueError as e:
            return errs + ["%s %s: body is not JSON: %s" % (method, path, e)]
        validate(doc, schema, v, "%s %s %s" % (method, path, code), errs)
    return errs


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = parse_yaml(f.read())
    passed = failed = 0
    # The contract itself: version, and every $ref resolves.
    problems = []
    if doc.get("openapi") != "3.1.0":
        problems.append("openapi.yaml: openapi is not 3.1.0")

    def walk(n):
        if isinstance(n, dict):
            for k, v in n.items():
                if k == "$ref":
                    try:
                        resolve(doc, v)
                    except (KeyError, ValueError):
                        problems.append("openapi.yaml: unresolved $ref " + v)
                else:
                    walk(v)
        elif isinstance(n, list):
            for x in n:
                walk(x)
    walk(doc)
    for p in problems:
        print("FAIL", p)
    failed += len(problems)
    passed += 0 if problems else 1
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 6:
                continue
            errs = check_one(doc, *parts)
            if errs:
                failed += 1
                for e in errs:
                    print("FAIL", e)
            else:
                passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
