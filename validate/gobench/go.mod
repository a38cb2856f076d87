module simbatch/gobench

go 1.22

require github.com/dolthub/swiss v0.2.1

require github.com/dolthub/maphash v0.1.0 // indirect
