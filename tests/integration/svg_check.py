"""tests/integration/svg_check.py -- the golden charts (tests/golden/svg/*.svg,
written by build/tests/test_svg) read by an XML parser that is not ours:
Python's xml.etree. Each must parse; be an <svg> in the SVG namespace, 800
wide, with a non-empty <title> and <desc> first; reference nothing outside
itself (no href, script, image, foreignObject, url() other than #ids); use
only the Okabe-Ito palette, greys, white and black; and hold the series its
alt text announces. Usage: python3 svg_check.py DIR. Ends with
"N passed, N failed"."""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

from tally import check, finish

NS = "{http://www.w3.org/2000/svg}"
# Okabe & Ito 2008 (https://jfly.uni-koeln.de/color/), plus the neutrals
PALETTE = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
           "#FFFFFF", "#DDDDDD", "#999999", "#555555", "#222222"}


def classes(el):
    return (el.get("class") or "").split()


def groups(root, cls):
    return [e for e in root.iter(NS + "g") if cls in classes(e)]


def announced(desc, pattern, items, what):
    """One check: the number pattern finds in desc is how many items there are."""
    m = re.search(pattern, desc)
    check(m and len(items) == int(m.group(1)), what)


def marked(root, desc, cls, attr, said, what):
    """One check: a single group of class cls, whose attr desc states (as said % attr)."""
    g = groups(root, cls)
    check(len(g) == 1 and said % g[0].get(attr) in desc, what)


def check_file(path):
    name = os.path.basename(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, "%s does not parse: %s" % (name, e))
        return
    check(True, name + " parses")
    check(root.tag == NS + "svg", name + ": root is <svg> in the SVG namespace")
    vb = (root.get("viewBox") or "").split()
    check(len(vb) == 4 and vb[:3] == ["0", "0", "800"] and 300 <= float(vb[3]) <= 2000,
          name + ": viewBox 0 0 800 H")
    kids = list(root)
    check(len(kids) >= 2 and kids[0].tag == NS + "title" and kids[1].tag == NS + "desc",
          name + ": <title> and <desc> come first")
    title = kids[0].text or ""
    desc = kids[1].text or ""
    check(len(title) > 10 and len(desc) > 80, name + ": title and desc say something")
    bad = [e.tag for e in root.iter() if e.tag in (NS + "script", NS + "image", NS + "foreignObject")
           or any(k.endswith("href") for k in e.attrib)]
    check(not bad, name + ": no scripts, images or links: %s" % bad)
    colours = set()
    for e in root.iter():
        for k in ("fill", "stroke"):
            v = e.get(k)
            if v and v != "none" and not v.startswith("url(#"):
                colours.add(v.upper())
            if v and v.startswith("url(") and not v.startswith("url(#"):
                check(False, name + ": external url() " + v)
    check(colours <= PALETTE, name + ": colours outside the palette: %s" % sorted(colours - PALETTE))
    text = "".join(root.itertext())
    check("<" not in text, name + ": no markup left in the text")

    kind = name[:-4]
    if kind.startswith("gap"):
        comps = [g for g in groups(root, "gap-component")]
        loss = [g for g in comps if "loss" in classes(g)]
        check(len(loss) >= 10, name + ": one bar per gap component (%d)" % len(loss))
        check(all(g.get("data-name") and any(t.text == g.get("data-name") for t in g.iter(NS + "text"))
                  for g in comps), name + ": each bar carries its component's name")
        tot = {c: float(g.get("data-mfu")) for g in groups(root, "gap-total") for c in classes(g)
               if c in ("roofline", "expected", "measured")}
        pts = sum(float(g.get("data-mfu-points")) for g in loss)
        check(abs(tot["roofline"] - pts - tot["expected"]) <= 0.005 * (len(loss) + 2),
              name + ": the waterfall ends at the expected MFU (%.2f - %.2f vs %.2f)"
              % (tot["roofline"], pts, tot["expected"]))
        check("Expected MFU %.2f%%" % tot["expected"] in desc, name + ": desc states the expected MFU")
        marked(root, desc, "gap-bound", "data-mfu", "%s%%", name + ": the bound is marked")
        if kind == "gap-measured":
            check("measured" in tot and "Measured MFU %.2f%%" % tot["measured"] in desc,
                  name + ": the measured MFU closes the waterfall")
    elif kind == "memory":
        st = groups(root, "stage")
        announced(desc, r"for each of (\d+) pipeline stage", st, name + ": one group per pipeline stage")
        check(all(len([r for r in g.iter(NS + "rect") if "seg" in classes(r)]) == 6 for g in st),
              name + ": six segments per stage")
        marked(root, desc, "capacity", "data-gb", "%s GB the device exposes", name + ": the capacity line")
    elif kind == "timeline":
        lanes = groups(root, "lane")
        announced(desc, r"One lane per pipeline stage \((\d+)\)", lanes, name + ": one lane per pipeline stage")
        ends = []
        for g in lanes:
            rs = [r for r in g.iter(NS + "rect") if "blk" in classes(r)]
            ends.append(float(rs[-1].get("x")) + float(rs[-1].get("width")) if rs else 0)
        check(ends and max(ends) - min(ends) <= 0.5, name + ": every lane spans the same step")
    elif kind == "roofline":
        ops = [e for e in root.iter() if "op" in classes(e)]
        announced(desc, r"(\d+) operators plotted", ops, name + ": one point per operator")
        check(all(("fwd" in classes(e)) == (e.tag == NS + "circle") for e in ops),
              name + ": forward as circles, backward as triangles")
        marked(root, desc, "ridge", "data-flops-per-byte", "ridge point at %s FLOP/byte", name + ": the ridge point")
    elif kind == "compare":
        m = re.search(r"(\d+) variants?", title)
        panels = groups(root, "panel")
        check(m and all(len(groups(p, "variant")) == int(m.group(1)) for p in panels) and panels,
              name + ": one bar row per variant in each panel")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/svg"
    files = sorted(glob.glob(os.path.join(d, "*.svg")))
    check(len(files) >= 5, "golden SVGs present in %s (%d)" % (d, len(files)))
    for f in files:
        check_file(f)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
