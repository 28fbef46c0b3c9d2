module wakecost

go 1.23
