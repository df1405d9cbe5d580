"""The analyzer's layer rule, checked on its #include lines.

The rule is written once, in analyzer/README.md: the table under "## Layers" says what each folder
holds and which folders it may include; the table under "## Private headers" names headers that
only some folders may include.  This module reads both tables and every source file below
analyzer/, and lists each #include "…" that breaks them:

  * a file outside the layer folders, or in a folder the table does not name;
  * an include that does not name a file by its folder ("cost_model.h", "../x.h"), or names one
    that does not exist below analyzer/ or include/;
  * an include of a folder the including folder may not include;
  * an include of a private header from a folder it is not open to.

  python3 analyzer_layers.py [ANALYZER_DIR]   prints the violations; exit status 1 if any
"""
import os
import re
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUFFIXES = (".h", ".cpp")
# Files of analyzer/ itself that are not code of a layer.
TOP_LEVEL = {"CMakeLists.txt", "README.md", "man_pages.py"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
FOLDER_CELL = re.compile(r"`([a-z_]+)/`")
HEADER_CELL = re.compile(r"`([a-z_]+/[a-z_0-9]+\.h)`")


class RuleError(Exception):
    """The README's tables are missing or malformed."""


def _table_rows(text, heading):
    """The cells of the rows of the first table after `heading` (the header row left out)."""
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        raise RuleError(f"README.md has no '{heading}' section") from None
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    if len(rows) < 3:
        raise RuleError(f"README.md: the table under '{heading}' is missing")
    return rows[2:]  # after the header and the |---| row


def read_rule(analyzer_dir):
    """(may_include, private): folder -> set of folders it may include besides itself; header ->
    set of folders that may include it."""
    with open(os.path.join(analyzer_dir, "README.md")) as f:
        text = f.read()
    may_include = {}
    for cells in _table_rows(text, "## Layers"):
        if len(cells) < 3:
            raise RuleError(f"README.md: a layer row needs three cells: {cells}")
        folder = FOLDER_CELL.fullmatch(cells[0])
        if not folder:
            raise RuleError(f"README.md: a layer row must start with a `folder/`: {cells[0]}")
        allowed = set(FOLDER_CELL.findall(cells[2]))
        may_include[folder.group(1)] = allowed
    for folder, allowed in may_include.items():
        unknown = allowed - set(may_include)
        if unknown:
            raise RuleError(f"README.md: {folder}/ may include unknown folders {sorted(unknown)}")
    private = {}
    for cells in _table_rows(text, "## Private headers"):
        headers = HEADER_CELL.findall(cells[0])
        folders = set(FOLDER_CELL.findall(cells[1])) if len(cells) > 1 else set()
        if not headers or not folders:
            raise RuleError(f"README.md: a private-header row needs headers and folders: {cells}")
        for header in headers:
            private[header] = folders
    return may_include, private


def violations(analyzer_dir, contract_dir=None):
    """Every breach of the rule below analyzer_dir, as 'path:line: what' strings (paths relative
    to analyzer_dir's parent), in file order."""
    analyzer_dir = os.path.abspath(analyzer_dir)
    if contract_dir is None:
        contract_dir = os.path.join(os.path.dirname(analyzer_dir), "include")
    may_include, private = read_rule(analyzer_dir)
    for header in private:
        if not os.path.exists(os.path.join(analyzer_dir, header)):
            yield f"analyzer/README.md: private header {header} does not exist"
    for name in sorted(os.listdir(analyzer_dir)):
        path = os.path.join(analyzer_dir, name)
        if os.path.isdir(path):
            if name not in may_include:
                yield f"analyzer/{name}/: a folder the layer table does not name"
        elif name not in TOP_LEVEL:
            yield f"analyzer/{name}: a file outside the layer folders"
    for folder in sorted(may_include):
        root = os.path.join(analyzer_dir, folder)
        if not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SUFFIXES):
                    yield from _file_violations(analyzer_dir, contract_dir, folder,
                                                os.path.join(dirpath, name), may_include, private)


def _file_violations(analyzer_dir, contract_dir, folder, path, may_include, private):
    shown = "analyzer/" + os.path.relpath(path, analyzer_dir)
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = m.group(1)
        where = f"{shown}:{number}: #include \"{target}\""
        parts = target.split("/")
        if len(parts) != 2 or ".." in parts:
            yield f"{where}: name the header as folder/file.h"
            continue
        to = parts[0]
        if to == "allocscope":  # the contract (include/allocscope), open to every layer
            if not os.path.exists(os.path.join(contract_dir, target)):
                yield f"{where}: no such header in include/"
            continue
        if to not in may_include:
            yield f"{where}: {to}/ is not a layer folder"
            continue
        if not os.path.exists(os.path.join(analyzer_dir, target)):
            yield f"{where}: no such header"
            continue
        if to != folder and to not in may_include[folder]:
            allowed = ", ".join(f"{d}/" for d in sorted(may_include[folder])) or "nothing but itself"
            yield f"{where}: {folder}/ may include {allowed}"
            continue
        if target in private and folder not in private[target]:
            opened = ", ".join(f"{d}/" for d in sorted(private[target]))
            yield f"{where}: {target} is private to {opened}"


def main(argv):
    analyzer_dir = argv[1] if len(argv) > 1 else os.path.join(SOURCE, "analyzer")
    try:
        found = list(violations(analyzer_dir))
    except RuleError as e:
        print(f"analyzer_layers: {e}", file=sys.stderr)
        return 2
    for v in found:
        print(v)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
