# ===- benchmarks_md.py - Sections of BENCHMARKS.md, replaced in place --=== #
#
# Every benchmark's report.py writes one section of BENCHMARKS.md: from its
# "## " heading to the next. A re-run replaces the section and keeps the
# hand-written notes that follow its NOTES marker.
#
# ===------------------------------------------------------------------=== #

NOTES = "<!-- notes -->"


def write_section(path, heading, lines, command):
    """Ends `lines` (the section from its `heading` line) with the shell
    block `command` that reproduces it and the NOTES marker, puts the
    section in place in the file at `path` (replace_section) and prints
    it."""
    section = "\n".join(lines + ["```sh", command, "```", "", NOTES]) + "\n"
    replace_section(path, heading, section)
    print(section)


def replace_section(path, heading, section):
    """Puts `section` (text starting with the line `heading`, ending with
    the NOTES marker line) in place of the section `heading` of the file
    at `path`, keeping the notes after the old section's marker; appends it
    when the file has no such section."""
    with open(path) as handle:
        text = handle.read()
    start = text.find(heading + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        following = text.find("\n## ", start + len(heading))
        end = len(text) if following < 0 else following + 1
        old = text[start:end]
        notes = old.split(NOTES + "\n", 1)[1] if NOTES + "\n" in old else ""
        text = text[:start] + section + notes + text[end:]
    with open(path, "w") as handle:
        handle.write(text)
