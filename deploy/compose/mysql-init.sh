#!/bin/sh
# Run once by the MySQL image's entrypoint on an empty data directory: the
# replication user binlog2ch connects as, and a table to replicate.
set -eu
mysql -uroot -p"$MYSQL_ROOT_PASSWORD" <<SQL
CREATE USER 'repl'@'%' IDENTIFIED BY '${REPL_PASSWORD}';
GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'repl'@'%';
GRANT SELECT ON shop.* TO 'repl'@'%';
CREATE DATABASE shop;
CREATE TABLE shop.orders (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer VARCHAR(64) NOT NULL,
  total DECIMAL(12, 2) NOT NULL,
  created DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
);
INSERT INTO shop.orders (customer, total) VALUES ('ada', 12.50), ('bob', 3.20), ('cy', 100.00);
SQL
