CREATE TABLE IF NOT EXISTS `analytics`.`every_type`
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
ENGINE = ReplacingMergeTree(`_version`, `_is_deleted`)
ORDER BY (`id`)
SETTINGS non_replicated_deduplication_window = 1000;

INSERT INTO `analytics`.`every_type` (`id`, `ti`, `tiu`, `b1`, `si`, `mi`, `miu`, `bi`, `biu`, `d92`, `d3810`, `d6530`, `f`, `dbl`, `bit64`, `dt`, `dtm`, `dtm6`, `ts`, `ts3`, `tm`, `yr`, `c`, `txt`, `bin`, `blb`, `e`, `eq`, `s`, `j`, `g`, `_version`, `_is_deleted`);
