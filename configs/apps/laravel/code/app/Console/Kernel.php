<?php

namespace App\Console;

use Illuminate\Foundation\Console;
use Illuminate\Foundation\Console\Kernel as ConsoleKernel;

/** Only the commands `artisan optimize` runs and their siblings: the full Artisan set would want
 * services (queue, database, cache) this app does not load. */
class Kernel extends ConsoleKernel
{
    protected $commands = [
        Console\ConfigCacheCommand::class,
        Console\ConfigClearCommand::class,
        Console\RouteCacheCommand::class,
        Console\RouteClearCommand::class,
        Console\RouteListCommand::class,
        Console\ViewCacheCommand::class,
        Console\ViewClearCommand::class,
    ];
}
