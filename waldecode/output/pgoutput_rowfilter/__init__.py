"""Publication row filters: pg_publication_rel.prqual read and evaluated as pgoutput evaluates it.

Owns three things the pgoutput plugin needs to decide whether a row change is published:

* ``parse_node_tree(text)``: the pg_node_tree text a row filter is stored as (nodeToString's
  format, src/backend/nodes/outfuncs.c; read back by read.c and readfuncs.c) into ``Node``s.
* ``RowFilter``: one relation's filter for one publication action, compiled from one or more
  prqual texts (several publications' filters are ORed, make_orclause in pgoutput.c), and
  evaluated over a row with SQL's three-valued logic: ``evaluate(row)`` is True, False or None
  (NULL); ``matches(row)`` is pgoutput_row_filter_exec_expr's answer (NULL counts as false).
* ``RelationRowFilters``: the filters of one relation for INSERT, UPDATE and DELETE built from
  the publications a slot was started with (pgoutput_row_filter_init), and ``filter_change``,
  pgoutput_row_filter's rules for which tuple the filter sees and how an UPDATE whose old and
  new rows disagree becomes an INSERT or a DELETE.

Rows are what ``OutputPlugin.change`` receives: one value per attribute in attnum order (dropped
columns included), each None (NULL), ``bytes`` as ``heap.heaptuple`` gives them (fixed-length:
the ``attlen`` bytes as stored; varlena: the payload without its header), a
``heaptuple.MissingValue`` (its attmissingval text is parsed), ``output.UNCHANGED_TOAST`` or a
``varlena.ToastPointer``.  The last two hold no value here: a filter that needs one raises
``RowFilterError`` (the server would fetch it from the TOAST table; waldecode does not guess).

PostgreSQL allows only simple expressions in row filters (check_simple_rowfilter_expr_walker in
src/backend/commands/publicationcmds.c): columns, constants, built-in operators and immutable
built-in functions, over built-in types and collations.  The expression is stored as parsed (not
planned: no constant folding), so the nodes met are Var, Const, OpExpr, DistinctExpr,
NullIfExpr, ScalarArrayOpExpr (IN, = ANY) with an ArrayExpr or an array Const, BoolExpr,
NullTest, BooleanTest, FuncExpr, RelabelType, CollateExpr, CoalesceExpr, MinMaxExpr, CaseExpr
(and CaseTestExpr).  Functions are known by their pg_proc OID (``_PROCS``: OID -> prosrc, the C
function; built-in OIDs are fixed by pg_proc.dat and checked against live servers by the
tests), each implemented as the C function computes it, including its errors (overflow,
division by zero).  Anything else -- another node (RowCompareExpr, RowExpr, XmlExpr), a
function or a column type not implemented here, ordering text under a collation other than
C/POSIX -- raises ``RowFilterError`` naming the relation and what is missing, when the filter is
compiled: never a guessed answer.

Datums are read as little-endian, as everywhere in waldecode; Const values in the node tree are
the Datum's bytes in memory order (outDatum), so the same holds for them.
"""

from __future__ import annotations

from ...heap.varlena import ToastPointer
from .. import UNCHANGED_TOAST
from ..base import DELETE, INSERT, UPDATE
from .compiler import _Compiler, _relname
from .functions import _EvalError
from .nodetree import RowFilterError, parse_node_tree

__all__ = ["Publication", "RelationRowFilters", "RowFilter", "RowFilterError", "parse_node_tree"]


# ---------------------------------------------------------------------------------------------
# Filters of a relation and pgoutput's rules for applying them
# ---------------------------------------------------------------------------------------------

class RowFilter:
    """The row filter of one relation for one action: the OR of one or more prqual texts.

    ``lc_collate`` / ``lc_ctype``: the database's (pg_database.datcollate / datctype), which the
    default collation means; only needed by filters that order text or change its case.
    """

    def __init__(self, prquals: list[str] | str, relation, lc_collate: str | None = None,
                 lc_ctype: str | None = None):
        if isinstance(prquals, str):
            prquals = [prquals]
        if not prquals:
            raise RowFilterError(f"row filter on table {_relname(relation)}: no expression")
        self.relation = relation
        self.prquals = list(prquals)
        comp = _Compiler(relation, lc_collate, lc_ctype)
        parts = []
        for text in self.prquals:
            try:
                tree = parse_node_tree(text)
            except RowFilterError as e:
                raise RowFilterError(f"row filter on table {_relname(relation)}: {e}") from None
            parts.append(comp.compile(tree))
        if len(parts) == 1:
            self._fn = parts[0]
        else:
            def or_(row):
                saw_null = False
                for p in parts:
                    v = p(row)
                    if v is None:
                        saw_null = True
                    elif v:
                        return True
                return None if saw_null else False
            self._fn = or_

    def evaluate(self, row: list):
        """True, False or None (NULL) for ``row`` (values in attnum order, as ``change`` has them)."""
        try:
            return self._fn(row)
        except _EvalError as e:
            # the server's ERROR stops decoding: so does this
            raise RowFilterError(f"row filter on table {_relname(self.relation)}: {e}") from None
        except (TypeError, ValueError, ArithmeticError) as e:
            raise RowFilterError(f"row filter on table {_relname(self.relation)} cannot be evaluated on "
                                 f"this row: {e}") from None

    def matches(self, row: list) -> bool:
        """pgoutput_row_filter_exec_expr: a NULL result counts as false."""
        return self.evaluate(row) is True


class Publication:
    """What pgoutput_row_filter_init reads of one publication for one relation: its actions,
    whether it covers the relation without a row filter (FOR ALL TABLES, FOR TABLES IN SCHEMA of
    the relation's schema, or a table entry whose prqual is NULL), and the prqual text otherwise."""

    __slots__ = ("name", "pubinsert", "pubupdate", "pubdelete", "prqual")

    def __init__(self, name: str, pubinsert: bool, pubupdate: bool, pubdelete: bool, prqual: str | None):
        self.name = name
        self.pubinsert = pubinsert
        self.pubupdate = pubupdate
        self.pubdelete = pubdelete
        self.prqual = prqual


class RelationRowFilters:
    """The row filters of one relation, per action, for the publications a slot publishes the
    relation through (pgoutput_row_filter_init): a publication without a filter for an action it
    publishes removes the filter of that action; the others' filters are ORed."""

    def __init__(self, relation, publications: list[Publication], lc_collate: str | None = None,
                 lc_ctype: str | None = None):
        self.relation = relation
        quals: dict[str, list[str]] = {INSERT: [], UPDATE: [], DELETE: []}
        no_filter = {INSERT: False, UPDATE: False, DELETE: False}
        for pub in publications:
            acts = ((INSERT, pub.pubinsert), (UPDATE, pub.pubupdate), (DELETE, pub.pubdelete))
            for action, published in acts:
                if not published:
                    continue
                if pub.prqual is None:
                    no_filter[action] = True
                elif not no_filter[action]:
                    quals[action].append(pub.prqual)
        self.filters: dict[str, RowFilter | None] = {}
        compiled: dict[tuple, RowFilter] = {}
        for action in (INSERT, UPDATE, DELETE):
            if no_filter[action] or not quals[action]:
                self.filters[action] = None
                continue
            key = tuple(quals[action])
            if key not in compiled:
                compiled[key] = RowFilter(list(key), relation, lc_collate, lc_ctype)
            self.filters[action] = compiled[key]

    def filter_change(self, action: str, old: list | None, new: list | None):
        """pgoutput_row_filter: ``(action, new)`` to send, or ``(None, None)`` to leave the change out.

        INSERT is judged on ``new``, DELETE on ``old``, an UPDATE without an old tuple on ``new``.
        An UPDATE with both: the old row and the new one (with the replica-identity columns that
        the WAL carried only in the old tuple, unchanged TOASTed values, taken from it) are both
        judged; neither matching drops the change, only the new one turns it into an INSERT of
        that completed new row, only the old one into a DELETE (of ``old``), both keep the UPDATE.
        """
        rf = self.filters.get(action)
        if rf is None:
            return action, new
        if new is None or old is None:
            return (action, new) if rf.matches(new if new is not None else old) else (None, None)
        tmp_new = None
        for i, att in enumerate(self.relation.attributes):
            if i >= len(new) or i >= len(old):
                break
            nv, ov = new[i], old[i]
            if nv is None or ov is None:
                continue
            if att.attlen == -1 and nv is UNCHANGED_TOAST and not (ov is UNCHANGED_TOAST or ov.__class__ is ToastPointer):
                if tmp_new is None:
                    tmp_new = list(new)
                tmp_new[i] = ov
        old_matched = rf.matches(old)
        new_matched = rf.matches(tmp_new if tmp_new is not None else new)
        if not old_matched and not new_matched:
            return None, None
        if not old_matched:
            return INSERT, (tmp_new if tmp_new is not None else new)
        if not new_matched:
            return DELETE, new
        return UPDATE, new


__all__ = ["Node", "parse_node_tree", "RowFilter", "RowFilterError", "Publication", "RelationRowFilters",
           "datum_value", "SUPPORTED_TYPES"]
