package ddl

import "testing"

// Statements as MariaDB 10.11 wrote them into its binlog while loading a
// mariadb-dump --routines --triggers --events of a schema (the server
// rewrites the CREATE of routines, triggers, views and events, and keeps
// the versioned comments of the DROPs), and as mariadb-dump writes them.
const (
	binlogTrigger = "CREATE DEFINER=`root`@`localhost` TRIGGER `trg_ins` BEFORE INSERT ON `t` FOR EACH ROW BEGIN\n" +
		"  UPDATE other_table SET n = n + 1 WHERE id = 1;\n  ALTER TABLE other_table ADD COLUMN x INT;\nEND"
	binlogProcedure = "CREATE DEFINER=`root`@`localhost` PROCEDURE `p1`(IN a INT)\nBEGIN\n  ALTER TABLE t ADD COLUMN zz INT;\n  DROP TABLE other_table;\nEND"
	binlogFunction  = "CREATE DEFINER=`root`@`localhost` FUNCTION `f1`(a INT) RETURNS int(11)\n    DETERMINISTIC\nBEGIN\nRETURN a + 1;\nEND"
	binlogView      = "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v1` AS select `t`.`id` AS `id` from `t`"
	binlogEvent     = "CREATE DEFINER=`root`@`localhost` EVENT `ev1` ON SCHEDULE EVERY 1 DAY STARTS '2024-01-01 00:00:00' ON COMPLETION NOT PRESERVE ENABLE DO BEGIN\n" +
		"  DELETE FROM t WHERE id < 0;\n  ALTER TABLE t ADD COLUMN q INT;\nEND \n"
	dumpTrigger = "/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER `trg_upd` AFTER UPDATE ON `t` FOR EACH ROW BEGIN\n" +
		"  IF NEW.v > 10 THEN\n    INSERT INTO other_table VALUES (NEW.id, NEW.v) ON DUPLICATE KEY UPDATE n = NEW.v;\n  END IF;\nEND \n*/"
	dumpEvent = "/*!50106 CREATE*/ /*!50117 DEFINER=`root`@`localhost`*/ /*!50106 EVENT `ev1` ON SCHEDULE EVERY 1 DAY STARTS '2024-01-01 00:00:00' ON COMPLETION NOT PRESERVE ENABLE DO BEGIN\n" +
		"  DELETE FROM t WHERE id < 0;\n  ALTER TABLE t ADD COLUMN q INT;\nEND \n*/ "
	dumpView = "/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n/*!50001 VIEW `v1` AS select `t`.`id` AS `id` from `t` */"
)

func TestNonTableKind(t *testing.T) {
	ignored := []string{
		binlogTrigger, binlogProcedure, binlogFunction, binlogView, binlogEvent, dumpTrigger, dumpEvent, dumpView,
		"/*!50001 CREATE VIEW `v1` AS SELECT\n NULL AS `id` */",
		"/*!50001 DROP VIEW IF EXISTS `v1`*/",
		"/*!50106 DROP EVENT IF EXISTS `ev1` */",
		"/*!50003 DROP FUNCTION IF EXISTS `f1` */",
		"/*!50003 DROP PROCEDURE IF EXISTS `p1` */",
		"CREATE DEFINER=`root`@`127.0.0.1` TRIGGER t2 AFTER UPDATE ON t FOR EACH ROW SET @x = 1",
		"CREATE OR REPLACE DEFINER=`root`@`127.0.0.1` PROCEDURE `p2`()\nSELECT 1",
		"CREATE DEFINER=`root`@`127.0.0.1` AGGREGATE FUNCTION `agg1`(x INT) RETURNS int(11)\n    DETERMINISTIC\nBEGIN DECLARE s INT DEFAULT 0; RETURN s; END",
		"CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY INVOKER VIEW `v2` AS SELECT 1",
		"ALTER ALGORITHM=MERGE DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v1` AS SELECT id FROM t",
		"ALTER DEFINER=`root`@`localhost` EVENT ev1 DISABLE",
		"ALTER PROCEDURE p1 COMMENT 'x'",
		"ALTER FUNCTION f1 COMMENT 'y'",
		"DROP TRIGGER trg_ins", "DROP VIEW v1, v2", "DROP EVENT ev1", "DROP PROCEDURE p1", "DROP FUNCTION IF EXISTS f1",
		"DROP USER 'u2'@'%'", "DROP ROLE r1", "DROP SERVER s1", "DROP PACKAGE BODY pk",
		"CREATE USER 'u1'@'%' IDENTIFIED BY 'pw'", "CREATE OR REPLACE USER u3", "CREATE ROLE r1",
		"CREATE SERVER s1 FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'x', DATABASE 'd', USER 'u', PORT 3306)",
		"ALTER USER 'u2'@'%' ACCOUNT LOCK", "ALTER SERVER s1 OPTIONS (USER 'v')",
		"GRANT SELECT ON d1.* TO 'u1'@'%'", "GRANT r1 TO 'u1'@'%'", "REVOKE SELECT ON d1.* FROM 'u1'@'%'",
		"SET PASSWORD FOR 'u1'@'%'='*B69027D44F6E5EDC07F1AEAD1477967B16F28227'",
		"RENAME USER 'u1'@'%' TO 'u2'@'%'",
		"FLUSH PRIVILEGES", "ANALYZE TABLE t", "OPTIMIZE TABLE t", "REPAIR TABLE t", "CHECK TABLE t",
		"analyze no_write_to_binlog table t", "OPTIMIZE LOCAL TABLE a, b",
		// Comments, case, spacing, and the DEFINER forms accounts take.
		"/* from the migration tool */ GRANT SELECT ON *.* TO app",
		"-- comment\n# another\n  \n\tFlush Privileges",
		"/*!*/ create /*!50017 definer = 'app'@'%' */ procedure p() select 1",
		"create\ndefiner\n=\n\"app\"@\"10.0.0.%\"\nfunction f() returns int return 1",
		"CREATE DEFINER=app@localhost TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
		"CREATE DEFINER=app@127.0.0.1 PROCEDURE p() SELECT 1",
		"CREATE DEFINER=CURRENT_USER PROCEDURE p() SELECT 1",
		"CREATE DEFINER = CURRENT_USER() EVENT e ON SCHEDULE EVERY 1 HOUR DO TRUNCATE t",
		"CREATE DEFINER=`we``ird`@`h` PROCEDURE p() SELECT 1",
		"CREATE DEFINER='o\\'brien'@'%' PROCEDURE p() SELECT 1",
		"CREATE DEFINER='o''brien'@'%' PROCEDURE p() SELECT 1",
		"CREATE DEFINER=`root`@`localhost` PROCEDURE `ALTER TABLE`() SELECT 1",
	}
	for _, q := range ignored {
		if NonTableKind(q) == "" {
			t.Errorf("not ignored: %q", q)
		}
	}
	for q, kind := range map[string]string{
		binlogTrigger: "CREATE TRIGGER", dumpTrigger: "CREATE TRIGGER", dumpView: "CREATE VIEW", binlogProcedure: "CREATE PROCEDURE",
		dumpEvent: "CREATE EVENT", "CREATE DEFINER=`root`@`127.0.0.1` AGGREGATE FUNCTION f(x INT) RETURNS INT RETURN 1": "CREATE FUNCTION",
		"/*!50003 DROP FUNCTION IF EXISTS `f1` */": "DROP FUNCTION", "grant all on *.* to u": "GRANT",
		"CREATE USER 'u1'@'%' IDENTIFIED BY 'pw'": "CREATE USER", "set password for u = 'x'": "SET PASSWORD",
		"analyze local table t": "ANALYZE TABLE", "CREATE OR REPLACE PACKAGE BODY pk AS END": "CREATE PACKAGE",
	} {
		if got := NonTableKind(q); got != kind {
			t.Errorf("%q: kind %q, want %q", q, got, kind)
		}
	}
	notIgnored := []string{
		// Tables and databases: left to the DDL parser.
		"ALTER TABLE t ADD COLUMN x INT", "ALTER ONLINE TABLE t ADD COLUMN w INT", "ALTER IGNORE TABLE t ADD UNIQUE (a)",
		"/*!40000 ALTER TABLE `t` DISABLE KEYS */",
		"CREATE TABLE t (a INT)", "CREATE OR REPLACE TABLE t (a INT)", "CREATE TEMPORARY TABLE t (a INT)",
		"CREATE INDEX i ON t (a)", "CREATE SEQUENCE s", "DROP TABLE IF EXISTS `v1` /* generated by server */",
		"DROP TEMPORARY TABLE t", "RENAME TABLE a TO b", "TRUNCATE TABLE t",
		"CREATE DATABASE d", "CREATE OR REPLACE DATABASE d", "DROP DATABASE d", "ALTER DATABASE d CHARACTER SET utf8mb4",
		// Rows and transactions: not this classifier's business.
		"INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "DELETE FROM t", "REPLACE INTO t VALUES (1)",
		"BEGIN", "COMMIT", "XA START 'x'", "XA END 'x'", "XA PREPARE 'x'", "XA COMMIT 'x'", "SAVEPOINT s",
		"SET STATEMENT max_statement_time=1 FOR GRANT SELECT ON *.* TO u",
		"ANALYZE SELECT * FROM t", "LOAD DATA INFILE 'x' INTO TABLE t",
		// Clauses that belong to views only, or nowhere.
		"CREATE ALGORITHM=MERGE TABLE t (a INT)", "CREATE SQL SECURITY INVOKER PROCEDURE p() SELECT 1",
		"CREATE DEFINER=`root`@`localhost` TABLE t (a INT)", "CREATE OR TABLE t (a INT)",
		"ALTER AGGREGATE FUNCTION f", "ALTER PACKAGE p",
		// Not read with certainty.
		"/*!99999 CREATE VIEW v AS SELECT 1 */ ALTER TABLE t ADD x INT",
		"/*!80030 GRANT SELECT ON *.* TO u */ DROP TABLE t",
		"/*M!100100 GRANT */ DROP TABLE t",
		"/* unterminated GRANT",
		"CREATE DEFINER=`root PROCEDURE p() SELECT 1",
		"CREATE DEFINER=root@ PROCEDURE p() SELECT 1",
		"CREATE DEFINER=(x) PROCEDURE p() SELECT 1",
		"--GRANT", "", "   ", "/* only a comment */",
	}
	for _, q := range notIgnored {
		if NonTableKind(q) != "" {
			t.Errorf("ignored: %q", q)
		}
	}
}

// FuzzNonTableKind checks the classifier never panics, and that what it
// ignores starts (past comments) with one of its statement keywords.
func FuzzNonTableKind(f *testing.F) {
	for _, q := range []string{binlogTrigger, dumpTrigger, dumpView, "GRANT x", "/*!50003 DROP FUNCTION f */", "CREATE DEFINER='a'@'b' VIEW v AS SELECT 1"} {
		f.Add(q)
	}
	starts := []string{"GRANT", "REVOKE", "FLUSH", "RENAME", "SET", "ANALYZE", "OPTIMIZE", "CHECK", "REPAIR", "CREATE", "ALTER", "DROP"}
	f.Fuzz(func(t *testing.T, q string) {
		if NonTableKind(q) == "" {
			return
		}
		l := &stmtLexer{s: q}
		first := l.word()
		found := false
		for _, s := range starts {
			found = found || first == s
		}
		if !found {
			t.Errorf("ignored %q, which starts with %q", q, first)
		}
		// No table statement is ignored, whatever follows its head.
		for _, head := range []string{"CREATE TABLE", "ALTER TABLE", "DROP TABLE", "CREATE OR REPLACE TABLE", "DROP DATABASE"} {
			if NonTableKind(head+" "+q) != "" {
				t.Errorf("ignored %q", head+" "+q)
			}
		}
	})
}
