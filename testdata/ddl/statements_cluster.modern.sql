-- ClickHouse 24.8: tables analytics.every_type and analytics.no_key (schematest.EveryType)

-- the table's database, before its CREATE TABLE
CREATE DATABASE IF NOT EXISTS `analytics` ON CLUSTER `c1`;

-- DROP COLUMN (MySQL dropped it)
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` DROP COLUMN `g`;

-- ADD COLUMN note
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `note` Nullable(String);

-- ADD COLUMN ti_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `ti_added` Nullable(Int8) DEFAULT '0' AFTER `id`;

-- ADD COLUMN b1_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `b1_added` Nullable(Int8) DEFAULT '1' AFTER `tiu`;

-- ADD COLUMN d6530_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `d6530_added` Nullable(Decimal(65, 30)) DEFAULT '1.500000000000000000000000000000' AFTER `d3810`;

-- ADD COLUMN dt_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `dt_added` Nullable(Date32) DEFAULT '2024-02-29' AFTER `bit64`;

-- ADD COLUMN dtm6_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `dtm6_added` Nullable(DateTime64(6, 'UTC')) DEFAULT '2024-02-29 23:59:58.123456' AFTER `dtm`;

-- ADD COLUMN ts3_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `ts3_added` Nullable(DateTime64(3, 'UTC')) AFTER `ts`;

-- ADD COLUMN e_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `e_added` Nullable(Enum8('' = 0, 'a,b' = 1, 'x' = 2, 'é' = 3)) DEFAULT 'x' AFTER `blb`;

-- ADD COLUMN eq_added
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` ADD COLUMN `eq_added` LowCardinality(Nullable(String)) AFTER `e`;

-- MODIFY COLUMN d6530 (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` MODIFY COLUMN `d6530` Nullable(Decimal(65, 30));

-- MODIFY COLUMN dtm6 (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` MODIFY COLUMN `dtm6` Nullable(DateTime64(6, 'UTC'));

-- MODIFY COLUMN eq (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` MODIFY COLUMN `eq` LowCardinality(Nullable(String));

-- RENAME COLUMN c TO code
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` RENAME COLUMN `c` TO `code`;

-- the current-state view (clickhouse.current_views)
CREATE VIEW IF NOT EXISTS `analytics`.`every_type_current` ON CLUSTER `c1` AS SELECT `id`, `ti`, `tiu`, `b1`, `si`, `mi`, `miu`, `bi`, `biu`, `d92`, `d3810`, `d6530`, `f`, `dbl`, `bit64`, `dt`, `dtm`, `dtm6`, `ts`, `ts3`, `tm`, `yr`, `c`, `txt`, `bin`, `blb`, `e`, `eq`, `s`, `j` FROM `analytics`.`every_type_all` FINAL WHERE `_is_deleted` = 0;

-- the view dropped with its table, or to be made again with its columns
DROP TABLE IF EXISTS `analytics`.`every_type_current` ON CLUSTER `c1`;

-- partition rows: ALTER TABLE every_type TRUNCATE PARTITION p2024, PARTITION BY RANGE (TO_DAYS(dt))
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` DELETE WHERE ((toUInt32(toDate(`dt`)) + 719528) < 739617 AND (toUInt32(toDate(`dt`)) + 719528) >= 739251);

-- partition rows: ALTER TABLE every_type DROP PARTITION p2024, PARTITION BY RANGE COLUMNS (dtm6)
ALTER TABLE `analytics`.`every_type` ON CLUSTER `c1` DELETE WHERE (`dtm6` < '2025-01-01 00:00:00' AND `dtm6` >= '2024-01-01 00:00:00');

-- a changelog table's rows from an interrupted copy (version 1234567890123), on the connected server only
ALTER TABLE `analytics`.`no_key` DELETE WHERE `_version` = 1234567890123 AND `_op` = 1;

-- TRUNCATE TABLE
TRUNCATE TABLE IF EXISTS `analytics`.`every_type` ON CLUSTER `c1`;

-- RENAME TABLE every_type TO every_type_old: the Distributed table first
DROP TABLE IF EXISTS `analytics`.`every_type_all` ON CLUSTER `c1`;

-- RENAME TABLE every_type TO every_type_old
RENAME TABLE `analytics`.`every_type` TO `analytics`.`every_type_old` ON CLUSTER `c1`;

-- RENAME TABLE: the Distributed table again, over the renamed table, its sharding key kept
CREATE TABLE IF NOT EXISTS `analytics`.`every_type_old_all` ON CLUSTER `c1`
(
    `id` Int32,
    `ti` Nullable(Int8),
    `tiu` Nullable(UInt8),
    `b1` Nullable(Int8),
    `si` Nullable(Int16),
    `mi` Nullable(Int32),
    `miu` Nullable(UInt32),
    `bi` Nullable(Int64),
    `biu` Nullable(UInt64),
    `d92` Nullable(Decimal(9, 2)),
    `d3810` Nullable(Decimal(38, 10)),
    `d6530` Nullable(Decimal(65, 30)),
    `f` Nullable(Float32),
    `dbl` Nullable(Float64),
    `bit64` Nullable(UInt64),
    `dt` Nullable(Date32),
    `dtm` Nullable(DateTime64(0, 'UTC')),
    `dtm6` Nullable(DateTime64(6, 'UTC')),
    `ts` Nullable(DateTime64(0, 'UTC')),
    `ts3` Nullable(DateTime64(3, 'UTC')),
    `tm` Nullable(String),
    `yr` Nullable(UInt16),
    `c` Nullable(String),
    `txt` Nullable(String),
    `bin` Nullable(FixedString(4)),
    `blb` Nullable(String),
    `e` Nullable(Enum8('' = 0, 'a,b' = 1, 'x' = 2, 'é' = 3)),
    `eq` LowCardinality(Nullable(String)),
    `s` Nullable(String),
    `j` Nullable(String),
    `g` Nullable(String),
    `_version` UInt64,
    `_is_deleted` UInt8
)
ENGINE = Distributed(`c1`, `analytics`, `every_type_old`, cityHash64(`id`));

-- DROP TABLE every_type_old: the Distributed table first
DROP TABLE IF EXISTS `analytics`.`every_type_old_all` ON CLUSTER `c1`;

-- DROP TABLE every_type_old
DROP TABLE IF EXISTS `analytics`.`every_type_old` ON CLUSTER `c1`;

-- fullsync -recreate: the Distributed table
DROP TABLE IF EXISTS `analytics`.`no_key_all` ON CLUSTER `c1`;

-- fullsync -recreate
DROP TABLE IF EXISTS `analytics`.`no_key` ON CLUSTER `c1`;

