// Package catalog reads what the source server's information_schema says
// of its tables: which there are and their sizes, their partitions, their
// foreign keys, the collations of columns and the server's collation ids.
// Every information_schema read outside table definitions is here (those
// are schema's, with the model they fill). It only reads: it must not
// change a server, read the binlog, or decide what a reading means for
// replication (the stream, the router and the cascades do).
package catalog
