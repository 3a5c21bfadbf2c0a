## DELETE FROM p WHERE id IN (200, 201)
node c via c_p from event kind delete
node s via s_p from event kind set_null
node g via g_c from c kind delete
-- g insert
INSERT INTO `db`.`g` (`id`, `cid`, `_version`, `_is_deleted`) SELECT `id`, `cid`, toUInt64(1999), toUInt8((_b2c_m2)) FROM (SELECT *, `cid` IN (SELECT `id` FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `note`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `note`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`c` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) GROUP BY `id`)) WHERE _b2c_del = 0 AND `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) AS _b2c_m2 FROM (SELECT `id`, _b2c_s.1 AS `cid`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`cid`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`g` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`g` WHERE `cid` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m2)
-- g count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`g` PREWHERE _version = 1999
-- s insert
INSERT INTO `db`.`s` (`id`, `pid`, `_version`, `_is_deleted`) SELECT `id`, multiIf(_b2c_m1, NULL, `pid`), toUInt64(1999), toUInt8(0) FROM (SELECT *, `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)) AS _b2c_m1 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`s` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`s` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m1)
-- s count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`s` PREWHERE _version = 1999
-- c insert
INSERT INTO `db`.`c` (`id`, `pid`, `note`, `_version`, `_is_deleted`) SELECT `id`, `pid`, `note`, toUInt64(1999), toUInt8((_b2c_m0)) FROM (SELECT *, `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)) AS _b2c_m0 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `note`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `note`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`c` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m0)
-- c count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`c` PREWHERE _version = 1999

## the same, replayed
node c via c_p from event kind delete
node s via s_p from event kind set_null
node g via g_c from c kind delete
-- g insert
INSERT INTO `db`.`g` (`id`, `cid`, `_version`, `_is_deleted`) SELECT `id`, `cid`, toUInt64(1999), toUInt8((_b2c_m2)) FROM (SELECT *, `cid` IN (SELECT `id` FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `note`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `note`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`c` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) AND `id` NOT IN (SELECT `id` FROM `db`.`c` WHERE _version >= 1000) GROUP BY `id`)) WHERE _b2c_del = 0 AND `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)) UNION ALL SELECT `id` FROM `db`.`c` WHERE _version >= 1000 AND `_is_deleted`) AS _b2c_m2 FROM (SELECT `id`, _b2c_s.1 AS `cid`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`cid`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`g` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`g` WHERE `cid` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)))) AND `id` NOT IN (SELECT `id` FROM `db`.`g` WHERE _version >= 1000) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m2)
-- g count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`g` PREWHERE _version = 1999
-- s insert
INSERT INTO `db`.`s` (`id`, `pid`, `_version`, `_is_deleted`) SELECT `id`, multiIf(_b2c_m1, NULL, `pid`), toUInt64(1999), toUInt8(0) FROM (SELECT *, `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)) AS _b2c_m1 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`s` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`s` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) AND `id` NOT IN (SELECT `id` FROM `db`.`s` WHERE _version >= 1000) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m1)
-- s count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`s` PREWHERE _version = 1999
-- c insert
INSERT INTO `db`.`c` (`id`, `pid`, `note`, `_version`, `_is_deleted`) SELECT `id`, `pid`, `note`, toUInt64(1999), toUInt8((_b2c_m0)) FROM (SELECT *, `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32)) AS _b2c_m0 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `note`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `note`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`c` WHERE _version < 1000 AND `id` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32), CAST(201 AS Int32))) AND `id` NOT IN (SELECT `id` FROM `db`.`c` WHERE _version >= 1000) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m0)
-- c count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`c` PREWHERE _version = 1999

## UPDATE p SET id = 1000 WHERE id = 200 (and a row whose id stays)
node c via c_p from event kind update
node cc via cc_p from event kind update
node s via s_p from event kind set_null
node gg via gg_cc from cc kind update
-- c insert
INSERT INTO `db`.`c` (`id`, `pid`, `note`, `_version`, `_is_deleted`) SELECT `id`, multiIf(_b2c_m0, [CAST(1000 AS Int32)][indexOf([CAST(200 AS Int32)], assumeNotNull(`pid`))], `pid`), `note`, toUInt64(2999), toUInt8(0) FROM (SELECT *, `pid` IN (CAST(200 AS Int32)) AS _b2c_m0 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `note`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `note`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`c` WHERE _version < 2000 AND `id` IN (SELECT `id` FROM `db`.`c` WHERE `pid` IN (CAST(200 AS Int32))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m0)
-- c count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`c` PREWHERE _version = 2999
-- cc insert
INSERT INTO `db`.`cc` (`pid`, `n`, `v`, `_version`, `_is_deleted`) SELECT if(_b2c_side = 0, `pid`, multiIf(_b2c_m1, [CAST(1000 AS Int32)][indexOf([CAST(200 AS Int32)], assumeNotNull(`pid`))], `pid`)), if(_b2c_side = 0, `n`, `n`), if(_b2c_side = 0, `v`, `v`), toUInt64(2999), toUInt8((_b2c_side = 0 OR 0)) FROM (SELECT *, `pid` IN (CAST(200 AS Int32)) AS _b2c_m1 FROM (SELECT `pid`, `n`, _b2c_s.1 AS `v`, _b2c_s.2 AS _b2c_del FROM (SELECT `pid`, `n`, argMax(tuple(`v`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`cc` WHERE _version < 2000 AND (`pid`, `n`) IN (SELECT `pid`, `n` FROM `db`.`cc` WHERE `pid` IN (CAST(200 AS Int32))) GROUP BY `pid`, `n`)) WHERE _b2c_del = 0) ARRAY JOIN [0, 1] AS _b2c_side WHERE (_b2c_m1) AND (_b2c_side = 1 OR NOT 0 AND (`pid`, `n`) != (multiIf(_b2c_m1, [CAST(1000 AS Int32)][indexOf([CAST(200 AS Int32)], assumeNotNull(`pid`))], `pid`), `n`))
-- cc count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`cc` PREWHERE _version = 2999
-- gg insert
INSERT INTO `db`.`gg` (`id`, `pid`, `n`, `_version`, `_is_deleted`) SELECT `id`, multiIf(_b2c_m3, [CAST(1000 AS Int32)][indexOf([CAST(200 AS Int32)], assumeNotNull(`pid`))], `pid`), `n`, toUInt64(2999), toUInt8(0) FROM (SELECT *, (`pid` IN (CAST(200 AS Int32)) AND isNotNull(`n`)) AS _b2c_m3 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS `n`, _b2c_s.3 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, `n`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`gg` WHERE _version < 2000 AND `id` IN (SELECT `id` FROM `db`.`gg` WHERE (`pid` IN (CAST(200 AS Int32)) AND isNotNull(`n`))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m3)
-- gg count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`gg` PREWHERE _version = 2999
-- s insert
INSERT INTO `db`.`s` (`id`, `pid`, `_version`, `_is_deleted`) SELECT `id`, multiIf(_b2c_m2, NULL, `pid`), toUInt64(2999), toUInt8(0) FROM (SELECT *, `pid` IN (CAST(200 AS Int32)) AS _b2c_m2 FROM (SELECT `id`, _b2c_s.1 AS `pid`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`pid`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`s` WHERE _version < 2000 AND `id` IN (SELECT `id` FROM `db`.`s` WHERE `pid` IN (CAST(200 AS Int32))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m2)
-- s count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`s` PREWHERE _version = 2999

## UPDATE p SET code = 'y' (no referenced column changes)
no cascade

## DELETE FROM t WHERE id = 4294967295 (a tree, three levels deep: those below are pruned while the level above is empty)
node t via t_t from event kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
node t via t_t from t kind delete (repeat)
-- t insert
INSERT INTO `db`.`t` (`id`, `parent`, `_version`, `_is_deleted`) SELECT `id`, `parent`, toUInt64(4999), toUInt8((_b2c_m0 OR _b2c_m1 OR _b2c_m2)) FROM (SELECT *, `parent` IN (CAST(4294967295 AS UInt32)) AS _b2c_m0, `parent` IN (SELECT `id` FROM (SELECT `id`, _b2c_s.1 AS `parent`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`parent`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`t` WHERE _version < 4000 AND `id` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (CAST(4294967295 AS UInt32))) GROUP BY `id`)) WHERE _b2c_del = 0 AND `parent` IN (CAST(4294967295 AS UInt32))) AS _b2c_m1, `parent` IN (SELECT `id` FROM (SELECT `id`, _b2c_s.1 AS `parent`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`parent`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`t` WHERE _version < 4000 AND `id` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (CAST(4294967295 AS UInt32)))) GROUP BY `id`)) WHERE _b2c_del = 0 AND `parent` IN (SELECT `id` FROM (SELECT `id`, _b2c_s.1 AS `parent`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`parent`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`t` WHERE _version < 4000 AND `id` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (CAST(4294967295 AS UInt32))) GROUP BY `id`)) WHERE _b2c_del = 0 AND `parent` IN (CAST(4294967295 AS UInt32)))) AS _b2c_m2 FROM (SELECT `id`, _b2c_s.1 AS `parent`, _b2c_s.2 AS _b2c_del FROM (SELECT `id`, argMax(tuple(`parent`, toUInt8(`_is_deleted`)), _version) AS _b2c_s FROM `db`.`t` WHERE _version < 4000 AND `id` IN (SELECT `id` FROM `db`.`t` WHERE (`parent` IN (CAST(4294967295 AS UInt32)) OR `parent` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (CAST(4294967295 AS UInt32))) OR `parent` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (SELECT `id` FROM `db`.`t` WHERE `parent` IN (CAST(4294967295 AS UInt32)))))) GROUP BY `id`)) WHERE _b2c_del = 0) WHERE (_b2c_m0 OR _b2c_m1 OR _b2c_m2)
-- t count
SELECT countIf(`_is_deleted`), countIf(NOT (`_is_deleted`)) FROM `db`.`t` PREWHERE _version = 4999

