#!/usr/bin/python3
"""Parses Prometheus text exposition (format 0.0.4) from a file with the official client's
parser (Debian python3-prometheus-client) and prints one line per sample:

    TYPE <family> <type>
    <sample name>{<label>="<value>",...} <value>      (labels sorted by name)

Exit status 2 when the text does not parse (the parser's message on stderr), 3 when the
module is missing. The e2e metrics tests read /metrics through this, so what they check is
what a Prometheus client understands.
"""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:  # pragma: no cover
    print("prometheus_client missing: %s" % e, file=sys.stderr)
    sys.exit(3)


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends
        print("parse error: %r" % e, file=sys.stderr)
        sys.exit(2)
    for f in families:
        print("TYPE %s %s" % (f.name, f.type))
        for s in f.samples:
            labels = ",".join('%s="%s"' % (k, s.labels[k]) for k in sorted(s.labels))
            if labels:
                print("%s{%s} %r" % (s.name, labels, float(s.value)))
            else:
                print("%s %r" % (s.name, float(s.value)))


main()
