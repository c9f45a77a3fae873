<?php

namespace App\Exceptions;

use Illuminate\Foundation\Exceptions\Handler as ExceptionHandler;

/** Laravel's handler as it is: an error is logged (to stderr, see config/logging.php) and answered 500. */
class Handler extends ExceptionHandler
{
}
