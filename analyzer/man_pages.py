#!/usr/bin/env python3
"""Writes the man pages of `allocscope` and of each of its commands from their --help texts.

usage: man_pages.py ALLOCSCOPE OUTDIR VERSION

allocscope.1.gz lists the commands; allocscope-COMMAND.1.gz holds `allocscope COMMAND --help`.
The help texts are the one description of the command line, so the pages cannot drift from it.
The pages are gzipped reproducibly (no time stamp), as Debian installs man pages.
"""
import gzip
import os
import re
import subprocess
import sys


def roff_escape(line):
    line = line.replace("\\", "\\e")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line.replace("-", "\\-")


def help_text(cli, args):
    proc = subprocess.run([cli] + args + ["--help"], capture_output=True, text=True, check=True)
    return proc.stdout


def commands(main_help):
    names = []
    in_list = False
    for line in main_help.splitlines():
        if line.strip() == "Commands:":
            in_list = True
            continue
        if in_list:
            m = re.match(r"^  (\S+)\s+(.*)$", line)
            if not m:
                if names:
                    break
                continue
            names.append((m.group(1), m.group(2)))
    if not names:
        raise SystemExit("man_pages.py: no commands in 'allocscope --help'")
    return names


def page(name, summary, text, version, see_also):
    lines = [
        f'.TH {name.upper()} 1 "" "allocscope {version}" "allocscope manual"',
        ".SH NAME",
        f"{roff_escape(name)} \\- {roff_escape(summary)}",
        ".SH DESCRIPTION",
        ".nf",
    ]
    lines += [roff_escape(line) for line in text.rstrip("\n").splitlines()]
    lines += [".fi", ".SH SEE ALSO"]
    lines.append(", ".join(f"\\fB{roff_escape(other)}\\fR(1)" for other in see_also) + ".")
    lines.append("The definitions behind the figures are in share/doc/allocscope/docs under the")
    lines.append("installation prefix (analysis.md, recording.md, compare.md, shapes.md, json.md).")
    return "\n".join(lines) + "\n"


def write_gz(path, text):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(text.encode())


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, outdir, version = sys.argv[1:]
    os.makedirs(outdir, exist_ok=True)
    main_help = help_text(cli, [])
    listed = commands(main_help)
    pages = {"allocscope": page("allocscope", "allocator profiling: record, report, diff, compare, export",
                                main_help, version, [f"allocscope-{n}" for n, _ in listed])}
    for name, summary in listed:
        pages[f"allocscope-{name}"] = page(f"allocscope-{name}", summary, help_text(cli, [name]), version,
                                           ["allocscope"])
    for stale in os.listdir(outdir):
        if stale.endswith(".1.gz") and stale[:-5] not in pages:
            os.remove(os.path.join(outdir, stale))
    for name, text in pages.items():
        write_gz(os.path.join(outdir, f"{name}.1.gz"), text)


if __name__ == "__main__":
    main()
