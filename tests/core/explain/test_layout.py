"""kfin/render/layout.py: wrapping between words and after `/`, never inside a name when it can be helped."""

from rich.text import Text

from kfin.render import layout


def lines(value, width):
    return [value[a:b] for a, b in layout.spans(value, width)]


def test_a_finalizer_breaks_after_its_slash_not_inside_a_word():
    assert lines("kubernetes.io/pvc-protection", 20) == ["kubernetes.io/", "pvc-protection"]
    assert lines("in use by Pod shop/postgres-0 (on node ip-10-0-1-17)", 24) == [
        "in use by Pod", "shop/postgres-0 (on node", "ip-10-0-1-17)"]


def test_a_piece_wider_than_the_column_breaks_at_a_dot_or_dash_then_anywhere():
    assert lines("load-balancer-cleanup", 10) == ["load-", "balancer-", "cleanup"]
    assert lines("x" * 12, 5) == ["xxxxx", "xxxxx", "xx"]


def test_a_table_that_cannot_fit_without_breaking_a_name_says_so():
    rows = [[Text("PersistentVolumeClaim"), Text("kubernetes.io/pvc-protection")]]
    assert layout.table(["KIND", "FINALIZERS"], rows, 30, flexible=[1]) is None
    header, laid = layout.table(["KIND", "FINALIZERS"], rows, 40, flexible=[1])
    assert header.plain == "KIND                   FINALIZERS"
    assert [line.plain for line in laid[0]] == ["PersistentVolumeClaim  kubernetes.io/", "                       pvc-protection"]
