package ddl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/binlog2ch/binlog2ch/schema"
)

// The foreign keys a statement declares. What they do to replicated rows
// (the cascades InnoDB applies without row events) is the cascade
// package's.

// FKAction is what a foreign key does to the child rows when their parent
// row is deleted or its referenced columns change.
type FKAction uint8

// The actions. RESTRICT and NO ACTION are the same in InnoDB: the parent's
// change was refused, or there were no children.
const (
	FKRestrict FKAction = iota
	FKCascade
	FKSetNull
	FKSetDefault // InnoDB refuses it; a key that has it is reported
)

func (a FKAction) String() string {
	switch a {
	case FKCascade:
		return "CASCADE"
	case FKSetNull:
		return "SET NULL"
	case FKSetDefault:
		return "SET DEFAULT"
	}
	return "RESTRICT"
}

// MarshalText and UnmarshalText keep actions readable in the checkpoint.
func (a FKAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

func (a *FKAction) UnmarshalText(b []byte) error {
	*a = ParseFKAction(string(b))
	return nil
}

func ParseFKAction(s string) FKAction {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "CASCADE":
		return FKCascade
	case "SET NULL":
		return FKSetNull
	case "SET DEFAULT":
		return FKSetDefault
	}
	return FKRestrict
}

// ForeignKey is one foreign key: Child's Columns reference Parent's
// RefColumns, in order.
type ForeignKey struct {
	Name       string           `json:"name"`
	Child      schema.TableName `json:"child"`
	Columns    []string         `json:"columns"`
	Parent     schema.TableName `json:"parent"`
	RefColumns []string         `json:"ref_columns"`
	OnDelete   FKAction         `json:"on_delete"`
	OnUpdate   FKAction         `json:"on_update"`
	// Inline: declared as a column's REFERENCES in CREATE TABLE, which
	// only some servers make a key (cascade.Keys.InlineReferences).
	Inline bool `json:"-"`
	// IndexName: Name is the FOREIGN KEY clause's index name, not a
	// CONSTRAINT symbol; MySQL from 8.0.16 names such a key as an unnamed
	// one (cascade.Keys.IndexNamesKeys).
	IndexName bool `json:"-"`
}

// Action is the key's action for a parent row deleted (del) or updated.
func (k *ForeignKey) Action(del bool) FKAction {
	if del {
		return k.OnDelete
	}
	return k.OnUpdate
}

// Cascades reports whether the key changes child rows on either action.
func (k *ForeignKey) Cascades() bool {
	return k.OnDelete == FKCascade || k.OnDelete == FKSetNull || k.OnUpdate == FKCascade || k.OnUpdate == FKSetNull
}

func (k *ForeignKey) String() string {
	return fmt.Sprintf("%s %s(%s) REFERENCES %s(%s) ON DELETE %s ON UPDATE %s", k.Name, k.Child, strings.Join(k.Columns, ", "),
		k.Parent, strings.Join(k.RefColumns, ", "), k.OnDelete, k.OnUpdate)
}

func (k *ForeignKey) Clone() *ForeignKey {
	c := *k
	c.Columns = slices.Clone(k.Columns)
	c.RefColumns = slices.Clone(k.RefColumns)
	return &c
}

// foreignKeyOf is the key a FOREIGN KEY clause declares (Name "" when the
// server is to name it); Child is set by the caller. ok is false for a
// clause without a referenced table.
func foreignKeyOf(name string, cols []*ast.IndexPartSpecification, ref *ast.ReferenceDef) (ForeignKey, bool) {
	if ref == nil || ref.Table == nil {
		return ForeignKey{}, false
	}
	k := ForeignKey{Name: name, Parent: schema.TableName{Database: ref.Table.Schema.O, Table: ref.Table.Name.O}}
	for _, c := range cols {
		if c.Column != nil {
			k.Columns = append(k.Columns, c.Column.Name.O)
		}
	}
	for _, c := range ref.IndexPartSpecifications {
		if c.Column != nil {
			k.RefColumns = append(k.RefColumns, c.Column.Name.O)
		}
	}
	if ref.OnDelete != nil {
		k.OnDelete = referAction(ref.OnDelete.ReferOpt)
	}
	if ref.OnUpdate != nil {
		k.OnUpdate = referAction(ref.OnUpdate.ReferOpt)
	}
	return k, true
}

func referAction(o ast.ReferOptionType) FKAction {
	switch o {
	case ast.ReferOptionCascade:
		return FKCascade
	case ast.ReferOptionSetNull:
		return FKSetNull
	case ast.ReferOptionSetDefault:
		return FKSetDefault
	}
	return FKRestrict
}
