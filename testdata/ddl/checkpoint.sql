-- state.store: clickhouse, state.table: binlog2ch.checkpoint

CREATE DATABASE IF NOT EXISTS `binlog2ch`;

CREATE TABLE IF NOT EXISTS `binlog2ch`.`checkpoint` (
  name String, fence Int64, seq UInt64,
  file String, pos UInt32, server String, saved_at DateTime, holder String, ext String
) ENGINE = ReplacingMergeTree(seq) ORDER BY (name, fence);

-- only to a table made before the column ext existed
ALTER TABLE `binlog2ch`.`checkpoint` ADD COLUMN ext String;

-- the same with clickhouse.cluster: c1

CREATE DATABASE IF NOT EXISTS `binlog2ch` ON CLUSTER `c1`;

CREATE TABLE IF NOT EXISTS `binlog2ch`.`checkpoint` ON CLUSTER `c1` (
  name String, fence Int64, seq UInt64,
  file String, pos UInt32, server String, saved_at DateTime, holder String, ext String
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/binlog2ch/binlog2ch/checkpoint', '{shard}_{replica}', seq) ORDER BY (name, fence);

-- only to a table made before the column ext existed
ALTER TABLE `binlog2ch`.`checkpoint` ON CLUSTER `c1` ADD COLUMN ext String;
