package throttle
