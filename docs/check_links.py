"""check_links.py HTMLDIR README: every link inside the built manual and the
README's relative links resolve, offline.

Sphinx's linkcheck builder fetches every link, and this machine has no
network; sphinx-build -n already refuses a cross-reference that does not
resolve. What it leaves is the HTML itself: every href and src in HTMLDIR
that is not an external URL must name a file there, and its #fragment an id
in that file. In README (read on GitHub, outside the manual) every relative
link must name a file of the tree, and a #fragment a heading of that Markdown
file. External links are counted and listed, not fetched. Exits 1 on the
first list of broken links, naming each with the page it is on.
"""
import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if name in ("href", "src") and value:
                self.links.append(value)


def parse(path, cache={}):
    if path not in cache:
        page = Page()
        with open(path, encoding="utf-8") as f:
            page.feed(f.read())
        cache[path] = page
    return cache[path]


def check_html(root, external):
    broken, count = [], 0
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            path = os.path.join(folder, name)
            for link in parse(path).links:
                url = urllib.parse.urlsplit(link)
                if url.scheme or url.netloc:
                    external.add(link)
                    continue
                count += 1
                target = path if not url.path else \
                    os.path.normpath(os.path.join(folder, urllib.parse.unquote(url.path)))
                where = os.path.relpath(path, root)
                if not os.path.abspath(target).startswith(os.path.abspath(root) + os.sep):
                    broken.append("%s: %s leaves the manual" % (where, link))
                elif not os.path.exists(target):
                    broken.append("%s: %s: no such file" % (where, link))
                elif url.fragment and target.endswith(".html") and \
                        urllib.parse.unquote(url.fragment) not in parse(target).ids:
                    broken.append("%s: %s: no id %s there" % (where, link, url.fragment))
    return broken, count


def slug(heading):
    """A heading's anchor as GitHub and MyST make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def markdown_anchors(path):
    anchors, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and re.match(r"#{1,6} ", line):
                anchors.add(slug(line.lstrip("#")))
    return anchors


def check_readme(readme, external):
    broken, count, fence = [], 0, False
    top = os.path.dirname(os.path.abspath(readme))
    with open(readme, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for link in re.findall(r"\]\(([^)\s]+)\)", line):
                url = urllib.parse.urlsplit(link)
                if url.scheme or url.netloc:
                    external.add(link)
                    continue
                count += 1
                target = os.path.join(top, url.path) if url.path else os.path.abspath(readme)
                where = "README.md:%d" % number
                if not os.path.exists(target):
                    broken.append("%s: %s: no such file" % (where, link))
                elif url.fragment and target.endswith(".md") and \
                        url.fragment not in markdown_anchors(target):
                    broken.append("%s: %s: no heading #%s there" % (where, link, url.fragment))
    return broken, count


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_links.py HTMLDIR README")
    external = set()
    broken, inside = check_html(sys.argv[1], external)
    more, readme = check_readme(sys.argv[2], external)
    broken += more
    for line in broken:
        print("broken link: " + line, file=sys.stderr)
    for link in sorted(external):
        print("external (not fetched): " + link)
    print("links: %d inside the manual, %d in README, %d external, %d broken"
          % (inside, readme, len(external), len(broken)))
    sys.exit(1 if broken else 0)


main()
