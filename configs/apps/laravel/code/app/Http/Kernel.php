<?php

namespace App\Http;

use Illuminate\Foundation\Http\Kernel as HttpKernel;

/** No global middleware and no sessions: the article's route and the framework's own work only. */
class Kernel extends HttpKernel
{
    protected $middleware = [];

    protected $middlewareGroups = ['web' => []];

    protected $routeMiddleware = [];
}
