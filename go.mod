module github.com/binlog2ch/binlog2ch

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	gopkg.in/yaml.v3 v3.0.1
)

require filippo.io/edwards25519 v1.2.0 // indirect
