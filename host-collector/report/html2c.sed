# One line of the report --html page template as a C string literal (timeline-page.c).
s/\\/\\\\/g
s/"/\\"/g
s/^/"/
s/$/\\n"/
