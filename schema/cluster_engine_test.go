package schema

import "testing"

func TestReplicatedEngine(t *testing.T) {
	c := &Cluster{ZooKeeperPath: "/p/{table}", Replica: "{replica}"}
	for in, want := range map[string]string{
		"MergeTree": "ReplicatedMergeTree('/p/{table}', '{replica}')",
		"ReplacingMergeTree(`_version`, `_is_deleted`)": "ReplicatedReplacingMergeTree('/p/{table}', '{replica}', `_version`, `_is_deleted`)",
		"ReplicatedReplacingMergeTree('/x', 'y', v)":    "ReplicatedReplacingMergeTree('/x', 'y', v)",
		"Log": "Log",
	} {
		if got := c.replicated(in); got != want {
			t.Errorf("replicated(%s) = %s, want %s", in, got, want)
		}
	}
}
