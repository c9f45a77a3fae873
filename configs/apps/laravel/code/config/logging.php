<?php
// Errors go to the container's stderr, where loadcmp reads a server's log lines.
return [
    'default' => 'stderr',
    'channels' => [
        'stderr' => [
            'driver' => 'monolog',
            'handler' => Monolog\Handler\StreamHandler::class,
            'with' => ['stream' => 'php://stderr'],
            'level' => 'error',
        ],
    ],
];
