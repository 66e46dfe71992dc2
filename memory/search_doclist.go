package memory

import "github.com/ncruces/go-sqlite3"

// Reading a term's doclist from the index, newest first.

// docRow is a doclist entry; for an r term, its instances in the sender's
// name and in the text's repeats (column extra).
type docRow struct {
	rowid         int64
	sender, extra int32
}

// termRows calls fn with the rowids of a term's doclist, newest first, until
// it returns false or the doclist ends.
func (r *searchRun) termRows(term string, fn func(rowid int64) bool) error {
	return r.each(sqlTermRows, func(st *sqlite3.Stmt) bool { return fn(st.ColumnInt64(0)) }, matchTerm(term))
}

// otherRows is termRows for an r term, with each entry's instances in the
// sender's name and in the text's repeats.
func (r *searchRun) otherRows(term string, fn func(c docRow) bool) error {
	var cur docRow
	sink := &ftsRowSinkBuf{fn: func(rowid int64, insts []ftsInst) { cur = rowFromInsts(rowid, insts) }}
	return r.each(sqlTermOther, func(*sqlite3.Stmt) bool { return fn(cur) }, matchTerm(term), sink)
}

func rowFromInsts(rowid int64, insts []ftsInst) docRow {
	c := docRow{rowid: rowid}
	for _, in := range insts {
		if in.col == 1 {
			c.sender++
		} else {
			c.extra++
		}
	}
	return c
}
