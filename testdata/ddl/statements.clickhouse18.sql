-- ClickHouse 18.16.1: tables analytics.every_type and analytics.no_key (schematest.EveryType)

-- the table's database, before its CREATE TABLE
CREATE DATABASE IF NOT EXISTS `analytics`;

-- DROP COLUMN (MySQL dropped it)
ALTER TABLE `analytics`.`every_type` DROP COLUMN `g`;

-- ADD COLUMN note
ALTER TABLE `analytics`.`every_type` ADD COLUMN `note` Nullable(String);

-- ADD COLUMN ti_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `ti_added` Nullable(Int8) DEFAULT '0' AFTER `id`;

-- ADD COLUMN b1_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `b1_added` Nullable(Int8) DEFAULT '1' AFTER `tiu`;

-- ADD COLUMN d6530_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `d6530_added` Nullable(String) DEFAULT '1.500000000000000000000000000000' AFTER `d3810`;

-- ADD COLUMN dt_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `dt_added` Nullable(Date) DEFAULT '2024-02-29' AFTER `bit64`;

-- ADD COLUMN dtm6_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `dtm6_added` Nullable(String) DEFAULT '2024-02-29 23:59:58.123456' AFTER `dtm`;

-- ADD COLUMN ts3_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `ts3_added` Nullable(String) AFTER `ts`;

-- ADD COLUMN e_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `e_added` Nullable(Enum8('' = 0, 'a,b' = 1, 'x' = 2, 'é' = 3)) DEFAULT 'x' AFTER `blb`;

-- ADD COLUMN eq_added
ALTER TABLE `analytics`.`every_type` ADD COLUMN `eq_added` Nullable(String) AFTER `e`;

-- MODIFY COLUMN d6530 (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` MODIFY COLUMN `d6530` Nullable(String);

-- MODIFY COLUMN dtm6 (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` MODIFY COLUMN `dtm6` Nullable(String);

-- MODIFY COLUMN eq (ClickHouse has another type than the mapping)
ALTER TABLE `analytics`.`every_type` MODIFY COLUMN `eq` Nullable(String);

-- RENAME COLUMN c TO code
-- refused: MySQL renamed column c to code, and ClickHouse 18.16.1 cannot rename a column (RENAME COLUMN needs 20.4); renaming by drop and add would lose its data. Rename it by hand (add code, copy c into it, drop c) and restart binlog2ch

-- the current-state view (clickhouse.current_views)
CREATE VIEW IF NOT EXISTS `analytics`.`every_type_current` AS SELECT `id`, `ti`, `tiu`, `b1`, `si`, `mi`, `miu`, `bi`, `biu`, `d92`, `d3810`, `d6530`, `f`, `dbl`, `bit64`, `dt`, `dtm`, `dtm6`, `ts`, `ts3`, `tm`, `yr`, `c`, `txt`, `bin`, `blb`, `e`, `eq`, `s`, `j` FROM `analytics`.`every_type` FINAL WHERE `_is_deleted` = 0;

-- the view dropped with its table, or to be made again with its columns
DROP TABLE IF EXISTS `analytics`.`every_type_current`;

-- partition rows: ALTER TABLE every_type TRUNCATE PARTITION p2024, PARTITION BY RANGE (TO_DAYS(dt))
ALTER TABLE `analytics`.`every_type` DELETE WHERE ((toUInt32(toDate(`dt`)) + 719528) < 739617 AND (toUInt32(toDate(`dt`)) + 719528) >= 739251);

-- partition rows: ALTER TABLE every_type DROP PARTITION p2024, PARTITION BY RANGE COLUMNS (dtm6)
-- refused: partitioning on a Nullable(String) column compares otherwise in ClickHouse than in MySQL

-- a changelog table's rows from an interrupted copy (version 1234567890123), on the connected server only
ALTER TABLE `analytics`.`no_key` DELETE WHERE `_version` = 1234567890123 AND `_op` = 1;

-- TRUNCATE TABLE
TRUNCATE TABLE IF EXISTS `analytics`.`every_type`;

-- RENAME TABLE every_type TO every_type_old
RENAME TABLE `analytics`.`every_type` TO `analytics`.`every_type_old`;

-- DROP TABLE every_type_old
DROP TABLE IF EXISTS `analytics`.`every_type_old`;

-- fullsync -recreate
DROP TABLE IF EXISTS `analytics`.`no_key`;

