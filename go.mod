module github.com/lockstepsim/lockstep

go 1.26.8
