<?php

namespace App\Http;

use Illuminate\Foundation\Http\Kernel as HttpKernel;

/** No global middleware: the article's routes run the framework's own work only. The form's routes alone
 * (the group `session`) start a session (a file per session) and check its CSRF token. */
class Kernel extends HttpKernel
{
    protected $middleware = [];

    protected $middlewareGroups = [
        'web' => [],
        'session' => [
            \Illuminate\Session\Middleware\StartSession::class,
            \Illuminate\Foundation\Http\Middleware\VerifyCsrfToken::class,
        ],
    ];

    protected $routeMiddleware = [];
}
