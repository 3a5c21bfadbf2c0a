CREATE TABLE IF NOT EXISTS `analytics`.`binlog_field_test_1`
(
    `id` UInt64,
    `testtinyint` Int8,
    `testsmallint` Int16,
    `testmediumint` Int32,
    `testint` Int32,
    `testbigint` Int64,
    `testvarchar` String,
    `testchar` String,
    `testenum` Enum8('' = 0, 'en1' = 1, 'en2' = 2, 'en3' = 3),
    `testset` String,
    `testtime` String,
    `testdate` Date32,
    `testyear` UInt16,
    `testtimestamp` DateTime64(0, 'UTC'),
    `testdatetime` DateTime64(0, 'UTC'),
    `testfloat` Float32,
    `testdouble` Float64,
    `testdecimal` Decimal(9, 2),
    `testtext` String,
    `testblob` String,
    `testbit` UInt64,
    `testbool` Int8,
    `testmediumblob` String,
    `testlongblob` String,
    `testtinyblob` String,
    `test_unsinged_tinyint` UInt8,
    `test_unsinged_smallint` UInt16,
    `test_unsinged_mediumint` UInt32,
    `test_unsinged_int` UInt32,
    `test_unsinged_bigint` UInt64,
    `_version` UInt64,
    `_is_deleted` UInt8
)
ENGINE = ReplacingMergeTree(`_version`, `_is_deleted`)
ORDER BY (`id`)
SETTINGS non_replicated_deduplication_window = 1000;

INSERT INTO `analytics`.`binlog_field_test_1` (`id`, `testtinyint`, `testsmallint`, `testmediumint`, `testint`, `testbigint`, `testvarchar`, `testchar`, `testenum`, `testset`, `testtime`, `testdate`, `testyear`, `testtimestamp`, `testdatetime`, `testfloat`, `testdouble`, `testdecimal`, `testtext`, `testblob`, `testbit`, `testbool`, `testmediumblob`, `testlongblob`, `testtinyblob`, `test_unsinged_tinyint`, `test_unsinged_smallint`, `test_unsinged_mediumint`, `test_unsinged_int`, `test_unsinged_bigint`, `_version`, `_is_deleted`);
