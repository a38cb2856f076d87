module simbatch/gobench

go 1.22
