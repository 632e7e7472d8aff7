module github.com/blang/semver

go 1.12
