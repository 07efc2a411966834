module reference

go 1.19
